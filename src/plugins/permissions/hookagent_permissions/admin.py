"""The application's API: change one slot's permissions, persisted at once.

Every function checks its input first (a typed error, nothing stored changed), then goes
through ``agent.update_agent_state``: under the session's gate, at the loaded version, with a
compare-and-set save, touching only that slot. A slot with no section yet starts from the
configuration's defaults (``options``). Each returns the slot's new ``PermissionContext``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hookagent import Agent, AgentState, RuntimeContext

from .errors import InvalidPermissionRule, RuleNotFound
from .options import options_for
from .section import SECTION, Decision, PermissionContext, from_json
from .validate import check_context, check_mode, check_room, make_rule, make_working_directory

__all__ = [
    "add_rule",
    "add_rule_sync",
    "add_working_directory",
    "add_working_directory_sync",
    "get_permission_context",
    "get_permission_context_sync",
    "has_permission_context",
    "remove_rule",
    "remove_rule_sync",
    "remove_working_directory",
    "remove_working_directory_sync",
    "replace_permission_context",
    "replace_permission_context_sync",
    "set_permission_mode",
    "set_permission_mode_sync",
]


def read_section(state: AgentState, agent: Agent) -> PermissionContext:
    """The slot's context, or the configuration's seed when the slot has none yet."""
    raw = state.extensions.get(SECTION)
    return options_for(agent.kernel).seed if raw is None else from_json(raw)


def write_section(state: AgentState, pc: PermissionContext) -> None:
    state.put_section(SECTION, pc.to_json())


async def _change(
    agent: Agent,
    ctx: RuntimeContext,
    reason: str,
    change: Callable[[PermissionContext], PermissionContext],
) -> PermissionContext:
    result: list[PermissionContext] = []

    def mutation(state: AgentState) -> None:
        new = change(read_section(state, agent))
        write_section(state, new)
        result.append(new)

    await agent.update_agent_state(ctx, reason, mutation, create=True)
    return result[0]


async def get_permission_context(agent: Agent, ctx: RuntimeContext) -> PermissionContext:
    """What decides this slot's calls now (its section, or the seed it would start from)."""
    state = await agent.get_agent_state(ctx.user_id, ctx.session_id)
    return read_section(state, agent)


async def has_permission_context(agent: Agent, ctx: RuntimeContext) -> bool:
    """The slot holds a section of its own (then it is decided in any configuration)."""
    state = await agent.get_agent_state(ctx.user_id, ctx.session_id)
    return SECTION in state.extensions


async def set_permission_mode(agent: Agent, ctx: RuntimeContext, mode: str) -> PermissionContext:
    """Set the slot's mode (``InvalidPermissionMode`` for an unknown one)."""
    canonical = check_mode(mode)
    return await _change(
        agent, ctx, f"permissions: mode {canonical}", lambda pc: attrs.evolve(pc, mode=canonical)
    )


async def replace_permission_context(
    agent: Agent, ctx: RuntimeContext, pc: PermissionContext
) -> PermissionContext:
    """Replace the slot's whole section with ``pc`` (checked first)."""
    checked = check_context(pc)
    return await _change(agent, ctx, "permissions: replaced", lambda _: checked)


async def add_rule(
    agent: Agent,
    ctx: RuntimeContext,
    tool_name: str,
    behavior: Decision,
    rule_content: str | None = None,
    source: str | None = "session",
) -> PermissionContext:
    """Add one rule (no duplicate); ``InvalidPermissionRule`` for a bad one."""
    rule = make_rule(tool_name, behavior, rule_content, source)
    if rule.behavior == "passthrough":
        raise InvalidPermissionRule("a passthrough rule decides nothing: add allow, deny or ask")

    def change(pc: PermissionContext) -> PermissionContext:
        new = pc.with_rule(rule)
        if new is not pc:
            check_room(pc)
        return new

    return await _change(agent, ctx, f"permissions: {rule.behavior} {rule.describe()}", change)


async def remove_rule(
    agent: Agent,
    ctx: RuntimeContext,
    tool_name: str,
    behavior: Decision,
    rule_content: str | None = None,
) -> PermissionContext:
    """Remove the rules of ``behavior`` for ``tool_name`` with that content (``RuleNotFound``
    when there is none: nothing is saved)."""
    probe = make_rule(tool_name, behavior, rule_content, None)
    if probe.behavior == "passthrough":
        raise InvalidPermissionRule("name the table: allow, deny or ask")

    def change(pc: PermissionContext) -> PermissionContext:
        new, removed = pc.without_rule(probe.tool_name, probe.behavior, probe.rule_content)  # type: ignore[arg-type]
        if not removed:
            held = [r.describe() for _, _, r in pc.rules() if r.behavior == probe.behavior]
            raise RuleNotFound(
                f"no {probe.behavior} rule {probe.describe()} in this slot; "
                f"its {probe.behavior} rules: {', '.join(held) or 'none'}"
            )
        return new

    return await _change(
        agent, ctx, f"permissions: removed {probe.behavior} {probe.describe()}", change
    )


async def add_working_directory(
    agent: Agent, ctx: RuntimeContext, key: str, path: str, source: str | None = "session"
) -> PermissionContext:
    """Add (or replace) the working directory ``key``."""
    if not isinstance(key, str) or not key:
        raise InvalidPermissionRule("a working directory's key is a non-empty string")
    wd = make_working_directory(path, source)
    return await _change(
        agent,
        ctx,
        f"permissions: working directory {key}",
        lambda pc: attrs.evolve(pc, working_directories={**pc.working_directories, key: wd}),
    )


async def remove_working_directory(
    agent: Agent, ctx: RuntimeContext, key: str
) -> PermissionContext:
    def change(pc: PermissionContext) -> PermissionContext:
        if key not in pc.working_directories:
            raise RuleNotFound(
                f"no working directory {key!r}; held: {', '.join(pc.working_directories) or 'none'}"
            )
        dirs = {k: v for k, v in pc.working_directories.items() if k != key}
        return attrs.evolve(pc, working_directories=dirs)

    return await _change(agent, ctx, f"permissions: removed working directory {key}", change)


# --------------------------------------------------------------------------- sync twins


def _sync(agent: Agent, fn: Callable[..., Any], *args: Any) -> Any:
    async def run() -> Any:
        return await fn(agent, *args)

    return agent.kernel.portal().call(run)


def get_permission_context_sync(agent: Agent, ctx: RuntimeContext) -> PermissionContext:
    return _sync(agent, get_permission_context, ctx)  # type: ignore[no-any-return]


def set_permission_mode_sync(agent: Agent, ctx: RuntimeContext, mode: str) -> PermissionContext:
    return _sync(agent, set_permission_mode, ctx, mode)  # type: ignore[no-any-return]


def replace_permission_context_sync(
    agent: Agent, ctx: RuntimeContext, pc: PermissionContext
) -> PermissionContext:
    return _sync(agent, replace_permission_context, ctx, pc)  # type: ignore[no-any-return]


def add_rule_sync(
    agent: Agent,
    ctx: RuntimeContext,
    tool_name: str,
    behavior: Decision,
    rule_content: str | None = None,
    source: str | None = "session",
) -> PermissionContext:
    return _sync(agent, add_rule, ctx, tool_name, behavior, rule_content, source)  # type: ignore[no-any-return]


def remove_rule_sync(
    agent: Agent,
    ctx: RuntimeContext,
    tool_name: str,
    behavior: Decision,
    rule_content: str | None = None,
) -> PermissionContext:
    return _sync(agent, remove_rule, ctx, tool_name, behavior, rule_content)  # type: ignore[no-any-return]


def add_working_directory_sync(
    agent: Agent, ctx: RuntimeContext, key: str, path: str, source: str | None = "session"
) -> PermissionContext:
    return _sync(agent, add_working_directory, ctx, key, path, source)  # type: ignore[no-any-return]


def remove_working_directory_sync(agent: Agent, ctx: RuntimeContext, key: str) -> PermissionContext:
    return _sync(agent, remove_working_directory, ctx, key)  # type: ignore[no-any-return]
