"""The admin API: one slot at a time, persisted at once, typed errors that change nothing.

The isolation test runs on the JSON-file store, Redis and PostgreSQL (the real servers on
loopback, tables and key prefixes of its own).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import hookagent_permissions.plugin as permissions
import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
from hookagent_permissions import admin
from hookagent_permissions.errors import (
    InvalidPermissionMode,
    InvalidPermissionRule,
    InvalidWorkingDirectory,
    RuleNotFound,
)
from hookagent_permissions.section import (
    SECTION,
    PermissionContext,
    PermissionRule,
    WorkingDirectory,
    from_json,
)

PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"
ANN = RuntimeContext(user_id="ann", session_id="s1")


def build(store: Any = None, options: dict[str, Any] | None = None) -> Any:
    return AgentConfig(
        plugins=[permissions],
        plugin_options={} if options is None else {"permissions": options},
        state_store=store or InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()


def stored(agent: Any, ctx: RuntimeContext) -> tuple[int, Any]:
    async def run() -> Any:
        return await (await agent.kernel.store()).get_versioned(ctx.user_id, ctx.session_id)

    got = agent.kernel.portal().call(run)
    return got.version, got.state


def test_set_mode_creates_and_persists_at_once() -> None:
    agent = build()
    pc = admin.set_permission_mode_sync(agent, ANN, "ACCEPT_EDITS")
    assert pc.mode == "accept_edits"
    version, state = stored(agent, ANN)
    assert version == 1 and state.extensions[SECTION]["mode"] == "accept_edits"
    assert state.extensions["admin_log"][-1]["reason"] == "permissions: mode accept_edits"
    assert admin.get_permission_context_sync(agent, ANN) == pc


def test_add_and_remove_rules() -> None:
    agent = build()
    admin.add_rule_sync(agent, ANN, "shell", "deny", "command:rm -rf", "policy")
    admin.add_rule_sync(agent, ANN, "shell", "allow", "command:git status")
    pc = admin.add_rule_sync(agent, ANN, "shell", "allow", "command:git status")  # no duplicate
    assert [r.rule_content for r in pc.allow_rules["shell"]] == ["command:git status"]
    assert pc.deny_rules["shell"] == (PermissionRule("shell", "command:rm -rf", "deny", "policy"),)
    pc = admin.remove_rule_sync(agent, ANN, "shell", "allow", "command:git status")
    assert pc.allow_rules == {}
    _, state = stored(agent, ANN)
    assert from_json(state.extensions[SECTION]) == pc


def test_working_directories() -> None:
    agent = build()
    pc = admin.add_working_directory_sync(agent, ANN, "w", "/srv/app/")
    assert pc.working_directories == {"w": WorkingDirectory("/srv/app", "session")}
    assert admin.remove_working_directory_sync(agent, ANN, "w").working_directories == {}
    with pytest.raises(RuleNotFound, match="no working directory 'w'"):
        admin.remove_working_directory_sync(agent, ANN, "w")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda a: admin.set_permission_mode_sync(a, ANN, "yolo"), InvalidPermissionMode),
        (lambda a: admin.add_rule_sync(a, ANN, "shell", "maybe"), InvalidPermissionRule),
        (lambda a: admin.add_rule_sync(a, ANN, "sh ell", "allow"), InvalidPermissionRule),
        (lambda a: admin.add_rule_sync(a, ANN, "t", "allow", "path:../etc"), InvalidPermissionRule),
        (lambda a: admin.add_rule_sync(a, ANN, "t", "passthrough"), InvalidPermissionRule),
        (lambda a: admin.remove_rule_sync(a, ANN, "shell", "deny", "x"), RuleNotFound),
        (lambda a: admin.add_working_directory_sync(a, ANN, "w", "rel"), InvalidWorkingDirectory),
        (
            lambda a: admin.replace_permission_context_sync(a, ANN, {"mode": "default"}),
            InvalidPermissionRule,
        ),
        (
            lambda a: admin.replace_permission_context_sync(a, ANN, PermissionContext(mode="x")),
            InvalidPermissionMode,
        ),
    ],
)
def test_a_bad_change_is_a_typed_error_and_changes_nothing(call: Any, error: type) -> None:
    agent = build()
    admin.add_rule_sync(agent, ANN, "shell", "allow", "command:ls")
    before = stored(agent, ANN)
    with pytest.raises(error):
        call(agent)
    after = stored(agent, ANN)
    assert after[0] == before[0] and after[1].to_json() == before[1].to_json()


def test_remove_rule_says_what_the_slot_holds() -> None:
    agent = build()
    admin.add_rule_sync(agent, ANN, "shell", "deny", "command:rm", "p")
    with pytest.raises(RuleNotFound, match=r"its deny rules: shell\(command:rm\)"):
        admin.remove_rule_sync(agent, ANN, "shell", "deny", "command:rmdir")


def test_a_new_slot_starts_from_the_configured_defaults() -> None:
    agent = build(
        options={"rules": [{"tool_name": "deploy", "behavior": "deny", "source": "policy"}]}
    )
    pc = admin.add_rule_sync(agent, ANN, "status", "allow")
    assert pc.deny_rules["deploy"][0].source == "policy"  # the seed, then the new rule
    assert pc.allow_rules["status"][0].tool_name == "status"


def test_replace_keeps_the_rest_of_the_slot() -> None:
    from hookagent import Msg

    agent = build()
    admin.set_permission_mode_sync(agent, ANN, "explore")

    async def add_history() -> None:
        await agent.update_agent_state(ANN, "x", lambda s: s.context.append(Msg.user("hi")))

    agent.kernel.portal().call(add_history)
    new = PermissionContext(mode="dont_ask").with_rule(
        PermissionRule("status", None, "allow", "ops")
    )
    admin.replace_permission_context_sync(agent, ANN, new)
    _, state = stored(agent, ANN)
    assert [m.text for m in state.context] == ["hi"]
    assert from_json(state.extensions[SECTION]) == new


# --------------------------------------------------------------------------- isolation


async def _drop_pg(prefix: str) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(PG_URL)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'DROP VIEW IF EXISTS "{prefix}message_rows"')
            for suffix in ("chunks", "messages", "slots", "fences", "schema_migrations"):
                await conn.exec_driver_sql(f'DROP TABLE IF EXISTS "{prefix}{suffix}"')
    finally:
        await engine.dispose()


@pytest.fixture(params=["file", "redis", "postgresql"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "file":
        from hookagent_store_jsonfile import LocalJsonFileStore

        store = LocalJsonFileStore(str(tmp_path / "state"))
        yield store
        await store.aclose()
    elif request.param == "redis":
        from hookagent_store_redis import connect
        from hookagent_store_redis.testing import delete_prefix, new_prefix

        prefix = new_prefix()
        store = connect(REDIS_URL, prefix=prefix)
        yield store
        await delete_prefix(store.client, prefix)
        await store.aclose()
    else:
        from hookagent_store_sql import SQLAgentStateStore

        prefix = f"perm{uuid.uuid4().hex[:10]}_"
        store = SQLAgentStateStore(PG_URL, table_prefix=prefix)
        yield store
        await store.aclose()
        await _drop_pg(prefix)


SLOTS = [
    RuntimeContext(user_id="ann", session_id="s1"),
    RuntimeContext(user_id="ann", session_id="s2"),
    RuntimeContext(user_id="bob", session_id="s1"),
    RuntimeContext(user_id="", session_id="s1"),
]


@pytest.mark.anyio
async def test_replace_touches_only_its_slot(backend: Any) -> None:
    agent = AgentConfig(
        plugins=[permissions], plugin_options={}, state_store=backend, autoload_plugins=False
    ).build()
    for i, ctx in enumerate(SLOTS):
        await admin.set_permission_mode(agent, ctx, ["default", "explore", "dont_ask", "bypass"][i])
        await admin.add_rule(agent, ctx, f"tool_{i}", "deny", f"command:rm {i}", f"src{i}")
    store = await agent.kernel.store()
    before = {}
    for ctx in SLOTS:
        got = await store.get_versioned(ctx.user_id, ctx.session_id)
        before[(ctx.user_id, ctx.session_id)] = (got.version, got.state.to_json())
    target = SLOTS[0]
    new = PermissionContext(
        mode="accept_edits", working_directories={"w": WorkingDirectory("/srv/w", "ops")}
    ).with_rule(PermissionRule("status", "arg:/x=1", "allow", "ops"))
    await admin.replace_permission_context(agent, target, new)
    for ctx in SLOTS:
        got = await store.get_versioned(ctx.user_id, ctx.session_id)
        key = (ctx.user_id, ctx.session_id)
        if ctx is target:
            assert got.version == before[key][0] + 1
            assert from_json(got.state.extensions[SECTION]) == new
        else:
            assert (got.version, got.state.to_json()) == before[key], key
    # and a reader in another agent (a fresh store handle) sees the same
    assert (await admin.get_permission_context(agent, SLOTS[1])).mode == "explore"


def test_a_slot_holds_a_bounded_number_of_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from hookagent_permissions import validate

    monkeypatch.setattr(validate, "MAX_RULES", 2)
    agent = build()
    admin.add_rule_sync(agent, ANN, "a", "allow")
    admin.add_rule_sync(agent, ANN, "b", "allow")
    admin.add_rule_sync(agent, ANN, "b", "allow")  # a duplicate adds nothing: no error
    before = stored(agent, ANN)
    with pytest.raises(InvalidPermissionRule, match="holds 2 rules already"):
        admin.add_rule_sync(agent, ANN, "c", "allow")
    assert stored(agent, ANN)[0] == before[0]
    three = (
        PermissionContext()
        .with_rule(PermissionRule("x", None, "deny"))
        .with_rule(PermissionRule("y", None, "deny"))
        .with_rule(PermissionRule("z", None, "deny"))
    )
    with pytest.raises(InvalidPermissionRule, match="at most 2 rules"):
        admin.replace_permission_context_sync(agent, ANN, three)


def test_rule_content_is_bounded() -> None:
    agent = build()
    with pytest.raises(InvalidPermissionRule, match="longer than 4096"):
        admin.add_rule_sync(agent, ANN, "shell", "deny", "command:" + "x" * 5000)
