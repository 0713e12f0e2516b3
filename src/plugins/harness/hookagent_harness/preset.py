"""The harness preset: one call that turns the harness plugins on with the reference's defaults.

It only writes an ``AgentConfig``: each plugin's options under its name in ``plugin_options``
and its tool group in ``tool_groups``, exactly what a hand-written configuration would hold.
Nothing here is needed to use a plugin alone; the preset is a convenience, never the only path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from hookagent import AgentConfig
from hookagent.errors import ConfigurationError


@attrs.frozen
class Part:
    """One harness plugin as the preset turns it on."""

    keyword: str
    """The ``harness_config`` keyword that switches it (True / a mapping / False)."""
    plugin: str
    """Its name: the key in ``plugin_options``."""
    options: Mapping[str, Any]
    """The options the preset gives it (the reference's defaults, spelled out)."""
    group: str | None
    """The tool group it offers the model (None: it has no tools of its own)."""
    why: str
    """What this default does, in one line."""


_BOOKKEEPING = tuple(
    {"tool_name": name, "behavior": "allow", "source": "harness"}
    for name in ("todo_write", "task_requirement_propose", "plan_enter", "plan_write")
)
"""Allowed without asking: they change only what the model keeps for itself (its todo list,
its proposals, its plan). ``plan_exit`` still asks: a person approves the plan, as in the
reference."""

PARTS: tuple[Part, ...] = (
    Part(
        "workspace",
        "workspace",
        {"scope": "user"},
        "workspace",
        "file tools; one directory per user, so MEMORY.md and PLAN.md follow the user "
        "from session to session (root: $HOOKAGENT_WORKSPACE_HOME/<agent id> unless url=)",
    ),
    Part(
        "tasks",
        "tasks",
        {},
        "tasks",
        "todo_write keeps the list in the session's tasks_context; the TASK_STATE "
        "projection shows it in every request and is never stored",
    ),
    Part(
        "permissions",
        "permissions",
        {"mode": "default", "rules": [*_BOOKKEEPING]},
        None,
        "default mode: read-only tools run, any other tool asks a person (the turn "
        "suspends until answered); todo_write, task_requirement_propose, plan_enter and "
        "plan_write are allowed, plan_exit asks (a person approves the plan)",
    ),
    Part(
        "plan_mode",
        "plan-mode",
        {"plan_file": "PLAN.md"},
        "plan-mode",
        "plan_enter / plan_write / plan_exit; while planning every tool that is not "
        "read-only is denied; the plan is PLAN.md in the workspace",
    ),
    Part(
        "memory",
        "memory",
        {"budget_tokens": 8000},
        "memory",
        "AGENTS.md, MEMORY.md and KNOWLEDGE.md from the workspace in every request's "
        "system prompt, within 8,000 tokens; memory_write appends to MEMORY.md",
    ),
    Part(
        "compaction",
        "compaction",
        {"trigger_messages": 50, "keep_messages": 20, "offload_chars": 80_000},
        None,
        "summarise the old part at 50 messages (or the window minus 20,000 tokens), keep "
        "the last 20 verbatim; tool results over 80,000 characters are offloaded to the "
        "workspace",
    ),
)
SESSION_LOG_DEFAULT = (
    "the session's authority is a session log on the state store's backend: the same URL "
    "as a state_store URL (redis://, postgresql+asyncpg://, file://...), "
    "file://$HOOKAGENT_STATE_HOME/session-log for the default store; a store object gets "
    "none (pass session_log=)"
)
"""What the preset does about the session log (the reference records every session)."""


def default_session_log(state_store: object) -> str | None:
    """Where the preset puts the session log, given the configuration's ``state_store``.

    A URL: the same one (the store plugins serve the log on every scheme they serve the
    state on). None (the default JSON-file store): a ``session-log`` directory in the state
    home (``$HOOKAGENT_STATE_HOME``, else ``~/.hookagent/state``). A store object: None, as
    its backend has no URL to share; pass ``session_log=`` yourself.
    """
    if isinstance(state_store, str):
        return state_store
    if state_store is None:
        home = os.environ.get("HOOKAGENT_STATE_HOME") or "~/.hookagent/state"
        return (Path(home).expanduser().resolve() / "session-log").as_uri()
    return None


def _options(part: Part, value: object) -> dict[str, Any] | None:
    if value is False or value is None:
        return None
    if value is True:
        return dict(part.options)
    if isinstance(value, Mapping):
        return {**part.options, **value}
    raise ConfigurationError(
        f"harness_config({part.keyword}=...) takes True (the defaults), a mapping of options "
        f"(over the defaults) or False (off), got {value!r}"
    )


def harness_settings(
    *,
    workspace: bool | Mapping[str, Any] = True,
    tasks: bool | Mapping[str, Any] = True,
    permissions: bool | Mapping[str, Any] = True,
    plan_mode: bool | Mapping[str, Any] = True,
    memory: bool | Mapping[str, Any] = True,
    compaction: bool | Mapping[str, Any] = True,
    session_log: Any = True,
    **config: Any,
) -> dict[str, Any]:
    """The ``AgentConfig`` keywords of the preset (what ``harness_config`` passes on).

    Each plugin keyword is True (its defaults, ``PARTS``), a mapping (options merged over the
    defaults key by key) or False (not turned on: no options, no tool group). ``session_log``
    is True (``default_session_log(state_store)``), a URL or a log object (used as given), or
    False / None (none: the state store is the authority, LEGACY mode). Every other
    keyword goes to ``AgentConfig`` unchanged, except that your ``tool_groups`` are added to
    the preset's and your ``plugin_options`` win key by key over the preset's.
    """
    chosen = {
        "workspace": workspace,
        "tasks": tasks,
        "permissions": permissions,
        "plan_mode": plan_mode,
        "memory": memory,
        "compaction": compaction,
    }
    plugin_options: dict[str, dict[str, Any]] = {}
    groups: list[str] = []
    for part in PARTS:
        options = _options(part, chosen[part.keyword])
        if options is None:
            continue
        plugin_options[part.plugin] = options
        if part.group is not None:
            groups.append(part.group)
    given = config.pop("plugin_options", None) or {}
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"plugin_options must be a mapping, got {given!r}")
    for name, options in given.items():
        plugin_options[name] = {**plugin_options.get(name, {}), **dict(options)}
    extra: Sequence[str] = config.pop("tool_groups", ()) or ()
    if isinstance(extra, str):
        raise ConfigurationError(f"tool_groups is a list of group names, got {extra!r}")
    groups += [g for g in extra if g not in groups]
    if session_log is True:
        session_log = default_session_log(config.get("state_store"))
    elif session_log is False:
        session_log = None
    return {
        **config,
        "plugin_options": plugin_options,
        "tool_groups": groups,
        "session_log": session_log,
    }


def harness_config(**kwargs: Any) -> AgentConfig:
    """An ``AgentConfig`` with the harness plugins on (see ``harness_settings``).

    ``harness_config(model="demo")`` is the whole harness; ``harness_config(model=m,
    memory=False, compaction={"trigger_messages": 100})`` drops one plugin and tunes another.
    """
    return AgentConfig(**harness_settings(**kwargs))


def describe() -> list[str]:
    """One line per default, for ``hookagent harness-demo`` and the docs."""
    lines = []
    for part in PARTS:
        group = f", tools: {part.group}" if part.group else ""
        lines.append(f"{part.plugin:<12} {dict(part.options)}{group}: {part.why}")
    lines.append(f"{'session-log':<12} {SESSION_LOG_DEFAULT}")
    return lines
