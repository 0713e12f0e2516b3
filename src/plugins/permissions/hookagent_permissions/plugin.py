"""The ``permissions`` plugin (entry point ``hookagent_permissions.plugin``).

One tool middleware at order 200 (inside plan mode at 100, outside offloading at 900). It
decides a call when the configuration names the plugin in ``plugin_options`` or the slot
holds a ``permission_context`` section; otherwise installing the plugin changes nothing. The
engine is compiled from the slot's own section (the configuration's defaults seed a slot
that has none): ALLOW runs the call, DENY answers with a ``denied`` result naming the rule
and its source, ASK suspends the turn with a confirm interaction. Every decision is a
``permission_decision`` run event.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from hookagent import Agent, AgentState, Middleware, RuntimeContext, ask, emit_event, hookimpl
from hookagent.state import PendingInteraction
from hookagent.tools import ToolCall, error_result

from .engine import Engine, Verdict
from .errors import InvalidPermissionContext, InvalidPermissionRule
from .options import Options, options_for
from .section import SECTION, PermissionRule, from_json
from .validate import check_room

HOOKAGENT_SECTIONS = (SECTION,)
"""The state section this plugin owns (read by ``hookagent plugins``; docs/plugins.md)."""

log = logging.getLogger("hookagent.permissions")
ORDER = 200
EVENT = "permission_decision"
REMEMBERED_SOURCE = "session"
"""The source of the allow rule an ``Approve(id, remember=True)`` adds."""
_CACHE_SIZE = 256
_engines: OrderedDict[bytes, Engine] = OrderedDict()
Outcome = Any  # a ToolResultBlock or a PendingInteraction


def engine_for(raw: Any, options: Options) -> Engine:
    """The engine for a stored section, compiled once per distinct content (a small LRU):
    a call costs one serialisation of the section and a dict lookup."""
    key = orjson.dumps([raw, options.path_arguments], option=orjson.OPT_SORT_KEYS)
    engine = _engines.get(key)
    if engine is None:
        pc = options.seed if raw is None else from_json(raw)
        engine = Engine.build(pc, options.path_arguments)
        _engines[key] = engine
        if len(_engines) > _CACHE_SIZE:
            _engines.popitem(last=False)
    else:
        _engines.move_to_end(key)
    return engine


@hookimpl
def hookagent_configure(config: Any, kernel: Any) -> None:
    """Refuse a configuration whose options cannot be used (``InvalidPermissionOptions``,
    a ``ConfigurationError`` naming the key)."""
    options_for(kernel)


@hookimpl
def hookagent_state_loaded(state: AgentState, ctx: RuntimeContext) -> None:
    """A slot with no section starts from the configuration's defaults (saved with the
    call); from then on the slot's own section decides."""
    if SECTION in state.extensions:
        return
    agent = ctx.get(Agent)
    if agent is not None and options_for(agent.kernel).configured:
        state.put_section(SECTION, options_for(agent.kernel).seed.to_json())


def _shown(arguments: Any) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in dict(arguments).items())
    return text if len(text) <= 300 else text[:297] + "..."


def _remember(state: AgentState, tool: str, options: Options) -> PermissionRule | None:
    """``Approve(id, remember=True)``: an allow rule for the tool in the call's state, saved
    with the call. Precedence stays fixed: it cannot outrank a deny or an ask rule."""
    rule = PermissionRule(tool, None, "allow", REMEMBERED_SOURCE)
    raw = state.extensions.get(SECTION)
    pc = options.seed if raw is None else from_json(raw)
    try:
        check_room(pc)
    except InvalidPermissionRule as exc:
        log.warning("not remembered: %s", exc)  # the call still runs: it was approved
        return None
    state.put_section(SECTION, pc.with_rule(rule).to_json())
    return rule


def _decide(call: ToolCall, state: AgentState | None, options: Options) -> Verdict:
    raw = state.extensions.get(SECTION) if state is not None else None
    try:
        engine = engine_for(raw, options)
    except InvalidPermissionContext as exc:
        return Verdict("deny", f"the slot's permissions cannot be read ({exc})", "unknown")
    assert call.tool is not None
    verdict = engine.decide(call.use.name, call.tool.read_only, call.use.input)
    if not call.approved or verdict.decision == "deny":
        return verdict  # a deny rule added since the question was asked still wins
    rule = _remember(state, call.use.name, options) if call.remember and state else None
    if rule is not None:
        reason = f"approved by the user; remembered as allow rule {rule.describe()}"
        return Verdict("allow", reason, verdict.mode, rule, origin="user")
    return Verdict("allow", "approved by the user", verdict.mode, origin="user")


async def permission_middleware(
    call: ToolCall, ctx: RuntimeContext, call_next: Callable[[ToolCall], Awaitable[Outcome]]
) -> Outcome:
    state = ctx.agent_state
    agent = ctx.get(Agent)
    options = options_for(agent.kernel) if agent is not None else Options()
    active = options.configured or (state is not None and SECTION in state.extensions)
    if call.tool is None or not active:
        return await call_next(call)  # an unknown tool gets the kernel's error result
    verdict = _decide(call, state, options)
    if verdict.mode == "unknown":
        log.warning("run %s: %s; every tool call is denied", ctx.run_id, verdict.reason)
    use = call.use
    await emit_event(ctx, EVENT, tool=use.name, tool_use_id=use.id, **verdict.event())
    if verdict.decision == "allow":
        return await call_next(call)
    if verdict.decision == "deny":
        return error_result(use, f"permission denied for {use.name}: {verdict.reason}", "denied")
    pending: PendingInteraction = ask(
        call,
        f"Allow {use.name}({_shown(use.input)})? {verdict.reason}",
        {
            "tool": use.name,
            "arguments": dict(use.input),
            "rule": verdict.rule.describe() if verdict.rule else None,
            "source": verdict.source,
            "mode": verdict.mode,
            "reason": verdict.reason,
        },
    )
    return pending


@hookimpl
def hookagent_wrap_tool_call() -> Middleware:
    return Middleware(permission_middleware, order=ORDER)


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    """``hookagent permissions ...`` (only where the CLI runs)."""
    register(
        "permissions",
        help="show or change a session's permission mode, rules and working directories",
        module=f"{__package__}.cli",  # imported when the command runs
        common=False,
    )
