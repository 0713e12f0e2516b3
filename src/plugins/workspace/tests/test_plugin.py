"""The plugin in an agent: the seam, the tools the model uses, options and the build-time
refusal of a remote workspace with a single-host store."""

from __future__ import annotations

import uuid
from pathlib import Path

import hookagent_workspace.plugin as entry
import pytest
from hookagent import (
    Agent,
    AgentConfig,
    ConfigurationError,
    InMemoryAgentStateStore,
    RuntimeContext,
    Workspace,
    WorkspacePathError,
)
from hookagent.messages import ToolResultBlock
from hookagent.plugins import create_plugin_manager
from hookagent.testing import ScriptedModel, tool_call
from hookagent_workspace import FsWorkspace, WorkspaceOptionsError, WorkspacePlugin

pytestmark = pytest.mark.anyio


def results(model: ScriptedModel) -> list[ToolResultBlock]:
    """Every tool result the model was shown, in order."""
    out: list[ToolResultBlock] = []
    for request in model.requests:
        last = request.messages[-1]
        out += [b for b in last.content if isinstance(b, ToolResultBlock) and b not in out]
    return out


def make(plugin: object, model: ScriptedModel | None = None, **kw: object) -> AgentConfig:
    kw.setdefault("state_store", InMemoryAgentStateStore())
    return AgentConfig(
        model=model or ScriptedModel(default="ok"),
        plugins=[plugin],
        tool_groups=["workspace"],
        autoload_plugins=False,
        **kw,  # type: ignore[arg-type]
    )


def test_tools_are_registered_with_their_traits(tmp_path: Path) -> None:
    config = make(WorkspacePlugin(url=str(tmp_path)))
    tools = config.kernel.tools
    traits = {n: (t.read_only, t.concurrency_safe, t.group) for n, t in tools.items()}
    ro, rw = (True, True, "workspace"), (False, False, "workspace")
    assert traits == {
        "read_file": ro, "list_files": ro, "glob": ro, "grep": ro,
        "write_file": rw, "edit_file": rw,
    }  # fmt: skip
    assert "ctx" not in tools["read_file"].parameters["properties"]


async def test_a_scripted_run_uses_every_file_tool(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call("write_file", path="src/app.py", content="def main():\n    return 1\n"),
            tool_call("edit_file", path="src/app.py", old_text="return 1", new_text="return 2"),
            tool_call("read_file", path="src/app.py"),
            tool_call("list_files", path="src"),
            tool_call("glob", pattern="**/*.py"),
            tool_call("grep", pattern=r"return \d", include="**/*.py"),
            tool_call("read_file", path="../../etc/passwd"),
            tool_call("read_file", path="missing.md"),
            tool_call("edit_file", path="src/app.py", old_text="nope", new_text="x"),
            "done",
        ]
    )
    config = make(WorkspacePlugin(url=str(tmp_path), scope="user"), model)
    async with config.build() as agent:
        reply = await agent.call("go", RuntimeContext(user_id="alice", session_id="s1"))
    assert reply.text == "done"
    got = [(r.state, r.text) for r in results(model)]
    assert got[0] == ("success", "created src/app.py (25 bytes)")
    assert got[1] == ("success", "replaced 1 occurrence in src/app.py")
    assert got[2] == ("success", "1\tdef main():\n2\t    return 2")
    assert got[3] == ("success", "src/app.py  (25 bytes)")
    assert got[4] == ("success", "src/app.py")
    assert got[5][1].startswith("src/app.py:2:     return 2\n[1 matches in 1 files")
    assert got[6][0] == "error" and "WorkspacePathError" in got[6][1] and "'..'" in got[6][1]
    assert got[7][0] == "error" and "WorkspaceFileNotFound" in got[7][1]
    assert got[8][0] == "error" and "EditError" in got[8][1] and "not found" in got[8][1]
    on_disk = tmp_path / "users" / "alice" / "src" / "app.py"
    assert on_disk.read_text() == "def main():\n    return 2\n"


async def test_per_user_scope_through_the_tools(tmp_path: Path) -> None:
    """Alice's file is invisible to Bob's tools; Bob's write lands in Bob's directory."""
    model = ScriptedModel(
        [
            tool_call("write_file", path="secret.md", content="alice only"),
            "saved",
            tool_call("read_file", path="secret.md"),
            tool_call("list_files"),
            tool_call("write_file", path="secret.md", content="bob's"),
            "done",
        ]
    )
    config = make(WorkspacePlugin(url=str(tmp_path), scope="user"), model)
    async with config.build() as agent:
        await agent.call("save", RuntimeContext(user_id="alice", session_id="s"))
        await agent.call("peek", RuntimeContext(user_id="bob", session_id="s"))
    got = [(r.state, r.text) for r in results(model)]
    assert got[1][0] == "error" and "WorkspaceFileNotFound" in got[1][1]
    assert got[2] == ("success", "(the workspace root is empty)")
    assert (tmp_path / "users" / "alice" / "secret.md").read_text() == "alice only"
    assert (tmp_path / "users" / "bob" / "secret.md").read_text() == "bob's"


async def test_the_seam_gives_each_call_its_scope(tmp_path: Path) -> None:
    seen: list[str] = []

    async def where(ctx: RuntimeContext) -> str:
        """Say where the workspace is."""
        agent = ctx.get(Agent)
        assert agent is not None
        ws = agent.kernel.workspace(ctx)
        assert isinstance(ws, Workspace)
        seen.append(ws.url)
        return ws.url

    model = ScriptedModel([tool_call("where"), "ok"])
    config = make(WorkspacePlugin(url=str(tmp_path), scope="session"), model, tools=[where])
    async with config.build() as agent:
        await agent.call("where?", RuntimeContext(user_id="../bob", session_id="s/1"))
    assert seen == [(tmp_path / "sessions" / "~2e~2e~2fbob" / "s~2f1").as_uri()]
    # outside a call too: the kernel says which configuration asks
    ws = config.kernel.workspace(RuntimeContext(user_id="carol"))
    assert isinstance(ws, FsWorkspace)
    assert ws.url == (tmp_path / "sessions" / "carol" / "default").as_uri()
    await ws.write_text("a.md", "x")
    assert (tmp_path / "sessions" / "carol" / "default" / "a.md").read_text() == "x"
    with pytest.raises(WorkspacePathError):
        await ws.read_text("../../x")


async def test_plugin_options_configure_the_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pm = create_plugin_manager(autoload=True)
    assert pm.get_plugin("workspace") is entry
    config = AgentConfig(
        plugin_manager=pm,
        state_store=InMemoryAgentStateStore(),
        plugin_options={"workspace": {"url": f"{tmp_path}/ws", "scope": "shared"}},
    )
    ws = config.kernel.workspace(RuntimeContext(user_id="u", session_id="s"))
    assert ws is not None and ws.url == (tmp_path / "ws").as_uri()
    # another configuration of the same entry point keeps its own settings
    other = AgentConfig(
        plugin_manager=create_plugin_manager(autoload=True),
        state_store=InMemoryAgentStateStore(),
        plugin_options={"workspace": {"url": f"{tmp_path}/other"}},
    )
    ws2 = other.kernel.workspace(RuntimeContext(user_id="u", session_id="s"))
    assert ws2 is not None and ws2.url == (tmp_path / "other" / "users" / "u").as_uri()


def test_the_default_root_is_under_the_workspace_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKAGENT_WORKSPACE_HOME", str(tmp_path))
    config = make(WorkspacePlugin(), name="my agent/1")
    ws = config.kernel.workspace(RuntimeContext(user_id="u", session_id="s"))
    assert ws is not None
    assert ws.url == (tmp_path / "my~20agent~2f1" / "users" / "u").as_uri()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scope": "team"}, "scope must be one of"),
        ({"url": ""}, "url must be a non-empty"),
        ({"url": 7}, "url must be a non-empty"),
        ({"max_file_bytes": 0}, "max_file_bytes must be an int >= 1"),
        ({"max_results": True}, "max_results must be an int >= 1"),
        ({"max_search_seconds": -1}, "max_search_seconds must be a number"),
        ({"shared": "yes"}, "shared must be a bool"),
        ({"colour": "red"}, "unknown option"),
        ({"url": "nosuchproto://x"}, "fsspec cannot open it"),
        ({"url": "simplecache::file:///tmp/x"}, "wraps local disk"),
        ({"url": "/tmp/x", "storage_options": {"a": 1}}, "storage_options apply to fsspec"),
    ],
)
def test_bad_options_refuse_the_configuration(options: dict[str, object], message: str) -> None:
    config = AgentConfig(
        plugins=[WorkspacePlugin()],
        plugin_options={"workspace": options},
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    with pytest.raises(WorkspaceOptionsError, match=message) as info:
        config.build()
    assert isinstance(info.value, ConfigurationError)


def test_a_configuration_options_win_over_the_plugins(tmp_path: Path) -> None:
    plugin = WorkspacePlugin(url=str(tmp_path / "a"), scope="shared")
    config = make(plugin, plugin_options={"workspace": {"scope": "user"}})
    ws = config.kernel.workspace(RuntimeContext(user_id="u", session_id="s"))
    assert ws is not None and ws.url == (tmp_path / "a" / "users" / "u").as_uri()


def test_messages_never_show_the_password(ftp_url: str) -> None:
    config = make(WorkspacePlugin(url=f"{ftp_url}/pw-{uuid.uuid4().hex}"))
    with pytest.raises(ConfigurationError) as info:
        config.build()
    assert "secret-pw" not in str(info.value) and "ftp://hk@127.0.0.1" in str(info.value)
