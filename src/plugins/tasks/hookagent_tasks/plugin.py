"""The ``tasks`` plugin: the model tools, the configure-time checks, the TASK_STATE projection
(model middleware, order 300) and the ``hookagent tasks`` commands."""

from __future__ import annotations

import weakref
from typing import Any, cast

import attrs
from hookagent import REASONING, Agent, Middleware, RuntimeContext, hookimpl
from hookagent.models import ModelRequest, ModelResponse
from hookagent.registry import ToolRegister

from .guard import refuse_trusted
from .model import SECTION
from .options import PLUGIN, TasksOptions
from .projection import ground, is_empty, projected
from .sections import ParseCache
from .tools import model_tools

HOOKAGENT_SECTIONS = (SECTION,)
"""The state section this plugin owns (read by ``hookagent plugins``; docs/plugins.md)."""

PROJECTION_ORDER = 300
"""Outermost first: memory 100, compaction 200, this 300, the plan-mode banner 400."""

_options: weakref.WeakKeyDictionary[Any, TasksOptions] = weakref.WeakKeyDictionary()
_cache = ParseCache()
_DEFAULTS = TasksOptions()


@hookimpl
def hookagent_register_tools(register: ToolRegister) -> None:
    for tool in model_tools():  # Tool objects (their schemas are richer than a signature's)
        register(cast(Any, tool))


@hookimpl
def hookagent_configure(config: Any, kernel: Any) -> None:
    """Refuse bad options (``TasksOptionsError``), and any tool that would hand the model the
    trusted contract (``TrustedFunctionAsTool``): both are ``ConfigurationError``s."""
    options = TasksOptions.from_config(config.plugin_options.get(PLUGIN))
    refuse_trusted(kernel.tools)
    # installed is not asked for: the projection shapes only the requests of configurations
    # that name the plugin or offer its tools (and of sessions that activated the group)
    groups = set(config.tool_groups)
    on = PLUGIN in config.plugin_options or PLUGIN in groups or "*" in groups
    _options[kernel] = attrs.evolve(options, on=on)


def options_for(ctx: RuntimeContext) -> TasksOptions:
    agent = ctx.get(Agent)
    found = _options.get(agent.kernel) if agent is not None else None
    return _DEFAULTS if found is None else found


async def project_request(
    request: ModelRequest, ctx: RuntimeContext, call_next: Any
) -> ModelResponse:
    """The model sees the task state; the history never holds the view (a new request)."""
    state = ctx.agent_state
    if request.purpose != REASONING or state is None:
        return await call_next(request)  # type: ignore[no-any-return]
    raw = state.extensions.get(SECTION)
    if raw is None:
        return await call_next(request)  # type: ignore[no-any-return]
    options = options_for(ctx)
    if not options.project or (
        not options.on and PLUGIN not in state.tool_context.activated_groups
    ):
        return await call_next(request)  # type: ignore[no-any-return]
    parsed = _cache.get(raw)
    tc = parsed.tc
    messages = projected(request.messages, tc, options.view, parsed.full, parsed.state)
    system = request.system
    if options.grounding and not is_empty(tc):
        system = ground(system, options.grounding)
    if messages is None and system == request.system:
        return await call_next(request)  # type: ignore[no-any-return]
    changed = request.evolve(
        messages=request.messages if messages is None else messages, system=system
    )
    return await call_next(changed)  # type: ignore[no-any-return]


@hookimpl
def hookagent_wrap_model_call() -> Middleware:
    return Middleware(project_request, order=PROJECTION_ORDER)


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    register(
        "tasks",
        help="the task contract: show, begin, decide, set-subject, invalidate, verify",
        module=f"{__package__}.cli",  # imported when the command runs
        common=False,
    )
