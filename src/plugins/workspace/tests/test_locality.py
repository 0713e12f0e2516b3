"""A workspace other hosts see needs a state store they see too: refused at build time with a
process- or host-local store, accepted with Redis or PostgreSQL (and a real call works)."""

from __future__ import annotations

import uuid
from pathlib import Path

import hookagent_store_jsonfile.plugin as jsonfile_plugin
import hookagent_store_redis.plugin as redis_plugin
import hookagent_store_sql.plugin as sql_plugin
import pytest
import redis.asyncio
from hookagent import AgentConfig, ConfigurationError, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_workspace import WorkspacePlugin
from sqlalchemy.ext.asyncio import create_async_engine

pytestmark = pytest.mark.anyio

REDIS = "redis://127.0.0.1:6379/0"
PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def config(
    workspace: dict[str, object], store: object, model: ScriptedModel | None = None
) -> AgentConfig:
    return AgentConfig(
        name="replicated",
        model=model or ScriptedModel(default="ok"),
        plugins=[WorkspacePlugin(**workspace), jsonfile_plugin, redis_plugin, sql_plugin],
        state_store=store,  # type: ignore[arg-type]
        tool_groups=["workspace"],
        autoload_plugins=False,
    )


@pytest.fixture
def remote(ftp_url: str) -> dict[str, object]:
    return {"url": f"{ftp_url}/replicas-{uuid.uuid4().hex}"}


def test_remote_workspace_with_the_in_memory_store_is_refused(remote: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError) as info:
        config(remote, InMemoryAgentStateStore()).build()
    message = str(info.value)
    assert "ftp://hk@127.0.0.1" in message and "InMemoryAgentStateStore" in message
    assert "store_locality='process'" in message and "other hosts share" in message


@pytest.mark.parametrize("kind", ["jsonfile", "sqlite", "default"])
def test_remote_workspace_with_a_host_local_store_is_refused(
    remote: dict[str, object], tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKAGENT_STATE_HOME", str(tmp_path / "state"))
    store = {
        "jsonfile": f"jsonfile://{tmp_path}/state",
        "sqlite": f"sqlite+aiosqlite:///{tmp_path}/s.db",
        "default": None,
    }[kind]
    cfg = config(remote, store)
    with pytest.raises(ConfigurationError, match=r"store_locality='host'") as info:
        cfg.build()
    named = "the default state store" if store is None else f"state store {store!r}"
    assert named in str(info.value)
    assert not (tmp_path / "state").exists()  # refused before the store was opened


def test_a_local_directory_declared_shared_is_refused_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="other hosts share"):
        config({"url": str(tmp_path), "shared": True}, InMemoryAgentStateStore()).build()


@pytest.mark.parametrize(
    "workspace", ["local", "memory", "remote-declared-private"], ids=lambda w: str(w)
)
def test_a_workspace_only_this_host_sees_works_with_any_store(
    workspace: str, tmp_path: Path, ftp_url: str
) -> None:
    options: dict[str, object] = {
        "local": {"url": str(tmp_path)},
        "memory": {"url": f"memory://hkw-{uuid.uuid4().hex}"},
        "remote-declared-private": {"url": f"{ftp_url}/p-{uuid.uuid4().hex}", "shared": False},
    }[workspace]  # type: ignore[assignment]
    agent = config(options, InMemoryAgentStateStore()).build()  # type: ignore[arg-type]
    ws = agent.kernel.workspace(RuntimeContext(user_id="u", session_id="s"))
    assert ws is not None and ws.shared is False


async def _two_replicas(workspace: dict[str, object], store_url: str) -> None:
    """Replica A writes a file in a turn; replica B (its own store object and filesystem
    handle) continues the conversation and reads the file."""
    ctx = RuntimeContext(user_id="alice", session_id=f"s-{uuid.uuid4().hex[:8]}")
    a_model = ScriptedModel([tool_call("write_file", path="plan.md", content="step 1"), "saved"])
    async with config(workspace, store_url, a_model).build() as agent:
        assert agent.kernel.store_locality == "shared"
        assert (await agent.call("save the plan", ctx)).text == "saved"
    b_model = ScriptedModel([tool_call("read_file", path="plan.md"), "it says step 1"])
    b_config = config(workspace, store_url, b_model)
    async with b_config.build() as agent:
        reply = await agent.call("what is the plan?", ctx)
    assert reply.text == "it says step 1"
    seen = [m.text for m in b_model.requests[0].messages]
    assert "save the plan" in seen and "saved" in seen  # the history came from the store
    result = b_model.requests[1].messages[-1].content[0]
    assert getattr(result, "text", None) == "1\tstep 1"
    await b_config.aclose()


async def test_remote_workspace_with_redis_is_accepted(remote: dict[str, object]) -> None:
    prefix = f"hkw-{uuid.uuid4().hex[:12]}"
    try:
        await _two_replicas(remote, f"{REDIS}?prefix={prefix}")
    finally:
        client = redis.asyncio.Redis.from_url(REDIS)
        keys = [k async for k in client.scan_iter(match=f"*{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_remote_workspace_with_postgresql_is_accepted(remote: dict[str, object]) -> None:
    schema = f"hkw_{uuid.uuid4().hex[:12]}"
    try:
        await _two_replicas(remote, f"{PG}?schema={schema}")
    finally:
        engine = create_async_engine(PG)
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await engine.dispose()
