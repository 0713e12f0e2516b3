"""The offline demo model (``AgentConfig(model="demo")``) and the demo tools it can call.

It is a rule-based program, not a language model: every reply starts with ``[demo model]``.
"""

from .model import DemoModel
from .tools import DEMO_TOOLS, get_weather, slow_count

__all__ = ["DEMO_TOOLS", "DemoModel", "get_weather", "slow_count"]
