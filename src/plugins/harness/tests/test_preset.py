"""The preset with every plugin on, and with each plugin removed in turn (the rest still acts).

"Removed" is both: the preset's keyword set to False, and the plugin's entry point blocked
(as if it were not installed). Every case makes real calls on an in-memory store and checks
each remaining plugin's own effect: its tools offered, MEMORY.md in the system prompt, a
permission question, the todo list stored, plan mode entered, a summary written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext, tool
from hookagent.errors import ConfigurationError
from hookagent.models import ModelRequest
from hookagent.testing import ScriptedModel, tool_call
from hookagent_harness import PARTS, harness_config, harness_settings

TODOS = [{"content": "write the fix", "status": "in_progress"}]


@tool(read_only=False)
def touch(name: str) -> str:
    """Create an empty marker (a tool that changes something: permissions ask)."""
    return f"touched {name}"


def script(request: ModelRequest) -> Any:
    last = [m for m in request.messages if m.id != "hookagent-tasks-state"][-1]
    if last.role == "tool":
        return "done"
    text = last.text
    if text == "touch":
        return tool_call("touch", name="x")
    if text == "todo":
        return tool_call("todo_write", todos=TODOS)
    if text == "plan":
        return tool_call("plan_enter")
    return f"ok ({len(request.messages)} messages)"


def build(tmp_path: Path, removed: str | None, monkeypatch: pytest.MonkeyPatch) -> Any:
    if removed is not None:
        monkeypatch.setenv("HOOKAGENT_BLOCKED_PLUGINS", removed)
    else:
        monkeypatch.delenv("HOOKAGENT_BLOCKED_PLUGINS", raising=False)
    switches: dict[str, Any] = {
        "workspace": {"url": str(tmp_path / "ws")},
        "compaction": {"trigger_messages": 12, "keep_messages": 4},
        "session_log": False if removed == "session-log" else f"memory://{tmp_path.name}",
    }
    switches.update({p.keyword: False for p in PARTS if p.plugin == removed})
    model = ScriptedModel(default=script)
    config = harness_config(
        model=model, tools=[touch], state_store=InMemoryAgentStateStore(), **switches
    )
    return config, model


@pytest.mark.parametrize("removed", [None, *[p.plugin for p in PARTS], "session-log"])
def test_each_plugin_removed_in_turn(
    removed: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, model = build(tmp_path, removed, monkeypatch)
    on = {p.plugin for p in PARTS} | {"session-log"}
    on.discard(removed)  # type: ignore[arg-type]
    agent = config.build()
    ctx = RuntimeContext(user_id="ann", session_id="s1")

    def fresh() -> RuntimeContext:  # a new call (a context carries its run's and turn's ids)
        return RuntimeContext(user_id="ann", session_id="s1")

    workspace = config.kernel.workspace(ctx)
    assert (workspace is not None) == ("workspace" in on)
    if workspace is not None:
        anyio.run(workspace.write_text, "MEMORY.md", "Ann likes tea.\n")

    # a call succeeds, and the tool groups of the plugins still on are offered
    assert agent.call_sync("hello", ctx).text.startswith("ok")
    first = model.requests[0]
    offered = {t.name for t in first.tools}
    assert ("write_file" in offered) == ("workspace" in on)
    assert ("todo_write" in offered) == ("tasks" in on)
    assert ("plan_enter" in offered) == ("plan-mode" in on)
    assert ("memory_write" in offered) == ("memory" in on)
    # memory reads MEMORY.md from the workspace: it needs both
    assert ("Ann likes tea." in (first.system or "")) == ({"memory", "workspace"} <= on)

    # permissions: a tool that changes something asks (the turn suspends), else it runs
    reply = agent.call_sync("touch", fresh())
    suspended = reply.metadata.get("generate_reason") == "SUSPENDED"
    assert suspended == ("permissions" in on)
    if suspended:
        from hookagent import Approve

        [question] = reply.metadata["pending"]
        reply = agent.call_sync(answers=[Approve(question["tool_use_id"])], ctx=fresh())
    assert reply.text == "done"

    # tasks: todo_write stores the list (the preset allows it without asking)
    reply = agent.call_sync("todo", fresh())
    state = agent.get_agent_state_sync("ann", "s1")
    if "tasks" in on:
        assert reply.text == "done"
        assert "write the fix" in str(state.extensions["tasks_context"])
    else:
        assert "tasks_context" not in state.extensions

    # plan mode: plan_enter puts the session in plan mode
    agent.call_sync("plan", fresh())
    state = agent.get_agent_state_sync("ann", "s1")
    assert ("plan_mode_context" in state.extensions) == ("plan-mode" in on)
    if "plan-mode" in on:
        assert state.extensions["plan_mode_context"]["plan_active"] is True

    # compaction: a long enough conversation is summarised (trigger lowered to 12 messages)
    for i in range(6):
        agent.call_sync(f"note {i}", fresh())
    state = agent.get_agent_state_sync("ann", "s1")
    assert (state.summary is not None) == ("compaction" in on)
    if "compaction" in on:
        assert len(state.context) < 12

    # the session log: the state's authority, every run recorded (else the store holds it)
    store = anyio.run(config.kernel.store)
    if "session-log" in on:
        from hookagent_session_log import SessionLogAdmin

        async def kinds() -> list[str]:
            admin = SessionLogAdmin(await store.log())
            return [e.type for e in await admin.events("ann", "s1")]

        recorded = anyio.run(kinds)
        assert recorded.count("run/started") == recorded.count("run/finished") >= 10
        assert "tool/dispatch" in recorded
        assert ("context/replaced" in recorded) == ("compaction" in on)  # a summary rewrites
    else:
        assert config.session_log is None
        assert anyio.run(store.get_versioned, "ann", "s1").state is not None


def test_the_preset_is_a_plain_configuration() -> None:
    """What the preset builds is what a hand-written configuration would hold."""
    settings = harness_settings(
        model="demo",
        tool_groups=["extra"],
        plugin_options={"memory": {"budget_tokens": 500}, "mine": {"x": 1}},
    )
    assert settings["tool_groups"] == ["workspace", "tasks", "plan-mode", "memory", "extra"]
    options = settings["plugin_options"]
    assert options["permissions"]["mode"] == "default"
    assert options["memory"] == {"budget_tokens": 500}  # the caller's value wins, key by key
    assert options["mine"] == {"x": 1}
    assert options["compaction"] == {
        "trigger_messages": 50,
        "keep_messages": 20,
        "offload_chars": 80_000,
    }
    assert isinstance(harness_config(model="demo"), AgentConfig)
    off = harness_settings(tasks=False, permissions=False)
    assert "tasks" not in off["plugin_options"] and "tasks" not in off["tool_groups"]
    assert "permissions" not in off["plugin_options"]


@pytest.mark.parametrize("bad", ["yes", 1, ["a"]])
def test_a_bad_switch_is_a_configuration_error(bad: object) -> None:
    with pytest.raises(ConfigurationError, match=r"harness_config\(memory=\.\.\.\) takes True"):
        harness_settings(memory=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("missing", [p.plugin for p in PARTS])
def test_the_preset_works_when_a_plugin_is_not_installed(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preset names a plugin that is not there (blocked): nothing reads its options."""
    monkeypatch.setenv("HOOKAGENT_BLOCKED_PLUGINS", missing)
    model = ScriptedModel(default=script)
    config = harness_config(
        model=model, state_store=InMemoryAgentStateStore(), workspace={"url": str(tmp_path)}
    )
    reply = config.build().call_sync("hello", RuntimeContext(user_id="ann", session_id="s1"))
    assert reply.text.startswith("ok")
    loaded = {i.name for i in config.kernel.pm.plugin_infos if i.status == "loaded"}
    assert missing not in loaded and (set(p.plugin for p in PARTS) - {missing}) <= loaded


def test_the_session_log_defaults_to_the_state_stores_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookagent_harness import default_session_log

    monkeypatch.setenv("HOOKAGENT_STATE_HOME", str(tmp_path))
    url = "postgresql+asyncpg://postgres@127.0.0.1/test"
    assert harness_settings(state_store=url)["session_log"] == url
    assert harness_settings()["session_log"] == (tmp_path / "session-log").as_uri()
    assert harness_settings(state_store=InMemoryAgentStateStore())["session_log"] is None
    assert harness_settings(session_log=False)["session_log"] is None
    assert harness_settings(session_log="redis://h/0")["session_log"] == "redis://h/0"
    assert default_session_log("file:///srv/state") == "file:///srv/state"
