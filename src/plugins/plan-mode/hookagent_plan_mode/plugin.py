"""The ``plan-mode`` plugin (this module is the entry point; options come from
``AgentConfig(plugin_options={"plan-mode": {...}})``, so one module serves every
configuration).

- ``hookagent_configure``: validates the options (a bad one refuses the configuration);
- ``hookagent_register_tools``: ``plan_enter``, ``plan_write``, ``plan_exit``;
- ``hookagent_state_loaded``: reads the session's section once per call into the call's
  ``PlanModeView`` (and sees whether the call is a subagent of a run in plan mode);
- ``hookagent_wrap_model_call`` (order 400): the banner; ``hookagent_wrap_tool_call``
  (order 100): the gate;
- ``hookagent_register_cli_commands``: ``hookagent plan show|enter|exit``.
"""

from __future__ import annotations

from typing import Any

from hookagent import Agent, AgentConfig, AgentState, ConfigurationError, RuntimeContext
from hookagent.hookspecs import hookimpl
from hookagent.kernel import Kernel
from hookagent.relay import Middleware

from .errors import PlanModeOptionsError
from .middleware import BANNER, GATE
from .mode import options_of, read_section, remember_options
from .options import PLUGIN_NAME, PlanModeOptions
from .section import SECTION
from .tools import GROUP, TOOLS
from .view import load_view

HOOKAGENT_SECTIONS = (SECTION,)
"""The state section this plugin owns (read by ``hookagent plugins``; docs/plugins.md)."""


@hookimpl
def hookagent_configure(config: AgentConfig, kernel: Kernel) -> None:
    try:
        options = PlanModeOptions.parse(config.plugin_options.get(PLUGIN_NAME))
    except PlanModeOptionsError as exc:
        raise ConfigurationError(str(exc)) from exc
    remember_options(kernel, options)


@hookimpl
def hookagent_register_tools(register: Any) -> None:
    for func in TOOLS:
        register(func, group=GROUP, read_only=False)


@hookimpl
def hookagent_state_loaded(state: AgentState, ctx: RuntimeContext) -> None:
    agent = ctx.get(Agent)
    options = options_of(agent) if agent is not None else PlanModeOptions()
    load_view(ctx, read_section(state), options)


@hookimpl
def hookagent_wrap_model_call() -> Middleware:
    return BANNER


@hookimpl
def hookagent_wrap_tool_call() -> Middleware:
    return GATE


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    register(
        "plan",
        help="a session's plan mode: show, enter, exit",
        module=f"{__package__}.cli",  # imported when the command runs
        common=False,
    )
