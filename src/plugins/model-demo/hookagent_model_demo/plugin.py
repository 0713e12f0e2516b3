"""Registers the ``demo`` model provider. The demo tools are NOT registered here.

Tools registered through ``hookagent_register_tools`` would be offered to every agent of every
application that installs this distribution; the demo passes ``DEMO_TOOLS`` explicitly instead
(``AgentConfig(tools=DEMO_TOOLS)``).
"""

from __future__ import annotations

from hookagent.hookspecs import hookimpl
from hookagent.registry import ModelRegister

from .model import DemoModel


@hookimpl
def hookagent_register_models(register: ModelRegister) -> None:
    register("demo", DemoModel)
