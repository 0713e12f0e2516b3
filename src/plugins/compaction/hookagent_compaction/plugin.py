"""The ``compaction`` plugin (entry point): hooks only; the work is in the other modules.

Options come from ``AgentConfig(plugin_options={"compaction": {...}})`` and are checked
when the configuration is prepared. Order: model middleware 200 (inside memory, outside
task projection), tool middleware 900 (innermost but for the tool: it sees the final
result).
"""

from __future__ import annotations

from typing import Any

import pluggy
from hookagent.context import RuntimeContext
from hookagent.hookspecs import hookimpl
from hookagent.kernel import Kernel
from hookagent.registry import ToolRegister
from hookagent.relay import Middleware
from hookagent.state import AgentState

from . import hookspecs
from .compactor import commit
from .middleware import MIDDLEWARE
from .offload import TOOL_MIDDLEWARE, read_offloaded
from .options import NAME, READ_OFFLOADED
from .runtime import configure
from .validate import CompactionProposal, pinned_ids_survive


@hookimpl
def hookagent_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def hookagent_configure(config: Any, kernel: Kernel) -> None:
    configure(kernel, config.plugin_options.get(NAME))


@hookimpl
def hookagent_register_tools(register: ToolRegister) -> None:
    register(read_offloaded, name=READ_OFFLOADED, group=NAME, read_only=True, concurrency_safe=True)


@hookimpl
def hookagent_wrap_model_call() -> Middleware:
    return MIDDLEWARE


@hookimpl
def hookagent_wrap_tool_call() -> Middleware:
    return TOOL_MIDDLEWARE


@hookimpl
def hookagent_before_persist(state: AgentState, ctx: RuntimeContext, outcome: str) -> None:
    commit(ctx, state)


@hookimpl
def hookagent_validate_compaction(proposal: CompactionProposal) -> str | None:
    return pinned_ids_survive(proposal)
