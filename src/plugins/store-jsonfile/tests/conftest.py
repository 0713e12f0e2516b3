import sys
from pathlib import Path

# the tests import their helpers as plain modules (pytest runs with --import-mode=importlib)
sys.path.insert(0, str(Path(__file__).parent))
