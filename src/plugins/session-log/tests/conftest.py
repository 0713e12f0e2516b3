from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hookagent.sessionlog import InMemorySessionLog

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sessionlog_support, the processes


@pytest.fixture
def log() -> InMemorySessionLog:
    return InMemorySessionLog()
