"""The memory plugin in an agent, on hookagent-workspace (a test-only dependency): files in
the system prompt of each reasoning request, never in the history, cut to the budget, and
edits seen by the next request."""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import hookagent_workspace.workspace as ws_module
import pytest
from hookagent import (
    SUMMARY,
    AgentConfig,
    ConfigurationError,
    InMemoryAgentStateStore,
    RuntimeContext,
    estimate_tokens,
    hookimpl,
)
from hookagent.codec import encode_msg, encode_state
from hookagent.messages import Msg, ToolResultBlock
from hookagent.models import ModelRequest, ModelResponse
from hookagent.testing import ScriptedModel, tool_call
from hookagent_memory import MemoryOptionsError, MemoryPlugin
from hookagent_workspace import WorkspacePlugin

pytestmark = pytest.mark.anyio
CTX = {"user_id": "alice", "session_id": "s1"}
NOON = datetime.datetime(2026, 12, 1, 12, 30, tzinfo=datetime.UTC)


def ctx() -> RuntimeContext:
    return RuntimeContext(**CTX)


def make(
    tmp_path: Path,
    model: ScriptedModel,
    *plugins: object,
    memory: MemoryPlugin | None = None,
    **kw: Any,
) -> AgentConfig:
    kw.setdefault("state_store", InMemoryAgentStateStore())
    found = [WorkspacePlugin(url=str(tmp_path), scope="user"), *plugins]
    if memory is not False:  # type: ignore[comparison-overlap]
        found.append(memory or MemoryPlugin(clock=lambda: NOON))
    return AgentConfig(
        model=model,
        plugins=found,
        tool_groups=["memory", "workspace"],
        system_prompt="You are helpful.",
        autoload_plugins=False,
        **kw,
    )


def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "users" / "alice"
    d.mkdir(parents=True, exist_ok=True)
    return d


async def test_files_go_into_the_system_prompt_of_each_request(tmp_path: Path) -> None:
    (user_dir(tmp_path) / "AGENTS.md").write_text("Always answer in French.")
    (user_dir(tmp_path) / "KNOWLEDGE.md").write_text("Paris is the capital.")
    model = ScriptedModel([tool_call("list_files"), "bonjour"])
    async with make(tmp_path, model).build() as agent:
        await agent.call("hi", ctx())
    assert len(model.requests) == 2
    for request in model.requests:
        system = request.system or ""
        assert system.startswith("You are helpful.\n\n<workspace_files>")
        assert '<file path="AGENTS.md">\nAlways answer in French.\n</file>' in system
        assert '<file path="KNOWLEDGE.md">\nParis is the capital.\n</file>' in system
        assert 'MEMORY.md">' not in system  # missing: fine, and not mentioned as a file


async def test_no_files_and_no_workspace_change_nothing(tmp_path: Path) -> None:
    model = ScriptedModel(["a"])
    async with make(tmp_path, model).build() as agent:
        await agent.call("hi", ctx())
    assert model.requests[0].system == "You are helpful."
    lone = ScriptedModel(["b"])
    config = AgentConfig(
        model=lone,
        plugins=[MemoryPlugin()],
        system_prompt="S",
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    async with config.build() as agent:
        await agent.call("hi", ctx())  # no workspace plugin: nothing, no error
    assert lone.requests[0].system == "S"


async def test_a_100kb_memory_is_cut_and_the_history_stays_byte_identical(
    tmp_path: Path,
) -> None:
    store = InMemoryAgentStateStore()
    model = ScriptedModel(["first answer", "second answer"])
    config = make(tmp_path, model, state_store=store)
    async with config.build() as agent:
        await agent.call("first question", ctx())
        before = (await store.get_versioned("alice", "s1")).state
        assert before is not None
        notes = "".join(
            f"## 2026-11-{i % 28 + 1:02d}\nNOTE-{i:05d} likes trains\n" for i in range(3500)
        )
        assert len(notes.encode()) >= 100_000
        (user_dir(tmp_path) / "MEMORY.md").write_text(notes)
        await agent.call("second question", ctx())
        after = (await store.get_versioned("alice", "s1")).state
    assert after is not None
    system = model.requests[1].system or ""
    # cut to the budget, the newest notes kept, with the notice
    assert config.kernel.count_tokens([], system=system) <= 8000 + 4 + estimate_tokens(
        "You are helpful.\n\n"
    )
    assert "NOTE-03499" in system and "NOTE-00000" not in system
    assert "[memory: MEMORY.md was cut to fit the 8000-token budget" in system
    # the durable history: the earlier messages byte for byte, plus exactly this turn's two
    old = [encode_msg(m) for m in before.context]
    new = [encode_msg(m) for m in after.context]
    assert new[: len(old)] == old
    assert [(m.role, m.text) for m in after.context[len(old) :]] == [
        ("user", "second question"),
        ("assistant", "second answer"),
    ]
    assert b"NOTE-" not in encode_state(after) and b"workspace_files" not in encode_state(after)
    # and what the model was sent besides the system prompt is the history itself
    assert [encode_msg(m) for m in model.requests[1].messages] == new[:-1]


async def test_a_memory_write_is_seen_by_the_next_request_of_the_same_turn(
    tmp_path: Path,
) -> None:
    model = ScriptedModel([tool_call("memory_write", note="Alice prefers tea."), "noted"])
    async with make(tmp_path, model).build() as agent:
        await agent.call("remember: tea", ctx())
    first, second = (r.system or "" for r in model.requests)
    assert "Alice prefers tea." not in first
    assert "## 2026-12-01 12:30 UTC\nAlice prefers tea." in second
    result = model.requests[1].messages[-1].content[0]
    assert isinstance(result, ToolResultBlock) and result.text == (
        "noted in MEMORY.md under 2026-12-01 12:30 UTC"
    )
    assert (user_dir(tmp_path) / "MEMORY.md").read_text() == (
        "# Memory\n\n## 2026-12-01 12:30 UTC\nAlice prefers tea.\n"
    )


async def test_an_edit_is_seen_by_the_next_request_and_the_cache_serves_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = MemoryPlugin()
    mem = user_dir(tmp_path) / "MEMORY.md"
    mem.write_text("likes trains")
    later = {"now": time.time() + 60}  # every file looks old: versions are trusted
    monkeypatch.setattr(ws_module.time, "time", lambda: later["now"])
    model = ScriptedModel(default="ok")
    async with make(tmp_path, model, memory=memory).build() as agent:
        await agent.call("one", ctx())
        await agent.call("two", ctx())
        assert memory.cache.renders == 1  # unchanged files: rendered once, then cached
        with open(mem, "r+") as f:  # an in-place edit, same size
            f.write("likes boats!")
        later["now"] = time.time() + 60
        await agent.call("three", ctx())
    assert [
        ("likes trains" in (r.system or ""), "likes boats!" in (r.system or ""))
        for r in model.requests
    ] == [
        (True, False),
        (True, False),
        (False, True),
    ]
    assert memory.cache.renders == 2


async def test_only_reasoning_requests_are_shaped_and_never_mutated(tmp_path: Path) -> None:
    (user_dir(tmp_path) / "AGENTS.md").write_text("rules")
    memory = MemoryPlugin()
    config = make(tmp_path, ScriptedModel(default="ok"), memory=memory)
    agent = config.build()
    seen: list[ModelRequest] = []

    async def call_next(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse(Msg.assistant("ok"))

    run_ctx = ctx().put(type(agent), agent)
    summary = ModelRequest(messages=[Msg.user("x")], system="sum", purpose=SUMMARY)
    await memory.shape(summary, run_ctx, call_next)
    assert seen[-1] is summary
    reasoning = ModelRequest(messages=[Msg.user("x")], system="sys")
    await memory.shape(reasoning, run_ctx, call_next)
    assert seen[-1] is not reasoning and reasoning.system == "sys"
    assert (seen[-1].system or "").startswith("sys\n\n<workspace_files>")
    assert seen[-1].messages is reasoning.messages


async def test_the_configurations_token_counter_sets_the_budget(tmp_path: Path) -> None:
    class Words:
        @hookimpl
        def hookagent_token_counter(self) -> Any:
            return lambda text: len(text.split())

    (user_dir(tmp_path) / "AGENTS.md").write_text(" ".join(f"w{i}" for i in range(2000)))
    model = ScriptedModel(["ok"])
    config = make(tmp_path, model, Words(), plugin_options={"memory": {"budget_tokens": 500}})
    async with config.build() as agent:
        await agent.call("hi", ctx())
    section = (model.requests[0].system or "").split("\n\n", 1)[1]
    assert len(section.split()) <= 500 < len(section)  # words, not characters / 4
    assert "it has 2000 tokens" in section


async def test_memory_search_and_bad_notes(tmp_path: Path) -> None:
    (user_dir(tmp_path) / "MEMORY.md").write_text(
        "# Memory\n\n## 2026-11-01 10:00 UTC\nAlice likes green tea.\n\n"
        "## 2026-11-02 10:00 UTC\nBob likes coffee.\n"
    )
    (user_dir(tmp_path) / "KNOWLEDGE.md").write_text("Tea is a drink.\n")
    model = ScriptedModel(
        [
            tool_call("memory_search", query="TEA likes"),
            tool_call("memory_search", query="tea"),
            tool_call("memory_search", query="nothing-like-this"),
            tool_call("memory_write", note="   "),
            tool_call("memory_write", note="x" * 5000),
            tool_call("memory_write", note="bell\x07"),
            "done",
        ]
    )
    async with make(tmp_path, model).build() as agent:
        await agent.call("search", ctx())
    texts = [
        (b.state, b.text)
        for r in model.requests[1:]
        for b in r.messages[-1].content
        if isinstance(b, ToolResultBlock)
    ]
    assert texts[0] == ("success", "MEMORY.md:4 (## 2026-11-01 10:00 UTC): Alice likes green tea.")
    assert texts[1][1].splitlines() == [
        "MEMORY.md:4 (## 2026-11-01 10:00 UTC): Alice likes green tea.",
        "KNOWLEDGE.md:1: Tea is a drink.",
    ]
    assert texts[2][1].startswith("no lines match 'nothing-like-this'")
    assert texts[3][0] == "error" and "the note is empty" in texts[3][1]
    assert texts[4][0] == "error" and "over 4000" in texts[4][1]
    assert texts[5][0] == "error" and "control characters" in texts[5][1]
    assert "Bob" in (user_dir(tmp_path) / "MEMORY.md").read_text()  # nothing was appended
    assert "x" * 100 not in (user_dir(tmp_path) / "MEMORY.md").read_text()


async def test_memory_tools_without_a_workspace_say_so() -> None:
    model = ScriptedModel([tool_call("memory_write", note="n"), "sorry"])
    config = AgentConfig(
        model=model,
        plugins=[MemoryPlugin()],
        tool_groups=["memory"],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    async with config.build() as agent:
        await agent.call("x", ctx())
    result = model.requests[1].messages[-1].content[0]
    assert isinstance(result, ToolResultBlock) and result.state == "error"
    assert "no workspace is configured" in result.text


def test_tool_traits() -> None:
    config = AgentConfig(
        plugins=[MemoryPlugin()], state_store=InMemoryAgentStateStore(), autoload_plugins=False
    )
    tools = config.kernel.tools
    assert (tools["memory_write"].read_only, tools["memory_search"].read_only) == (False, True)
    assert tools["memory_write"].group == tools["memory_search"].group == "memory"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget_tokens": 10}, "budget_tokens must be an int >= 64"),
        ({"budget_tokens": "8000"}, "budget_tokens must be an int"),
        ({"files": "MEMORY.md"}, "must be a list of paths"),
        ({"files": ["../x.md"]}, "relative path inside the workspace"),
        ({"files": ["/abs.md"]}, "relative path inside the workspace"),
        ({"files": ["a.md", "a.md"]}, "twice"),
        ({"keep_tail": ["OTHER.md"]}, "files not loaded"),
        ({"memory_file": ""}, "non-empty relative path"),
        ({"budget": 1}, "unknown option"),
    ],
)
def test_bad_options_refuse_the_configuration(options: dict[str, object], message: str) -> None:
    config = AgentConfig(
        plugins=[MemoryPlugin()],
        plugin_options={"memory": options},
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    with pytest.raises(MemoryOptionsError, match=message) as info:
        config.build()
    assert isinstance(info.value, ConfigurationError)


class DictWorkspace:
    """A workspace with only the kernel's protocol (no ``version``): read every request."""

    url, shared = "memory://dict", False

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.reads = 0

    async def read_text(self, path: str) -> str:
        self.reads += 1
        if path not in self.files:
            from hookagent import WorkspaceFileNotFound

            raise WorkspaceFileNotFound(path)
        return self.files[path]

    async def write_text(self, path: str, text: str) -> None:
        self.files[path] = text

    async def append_text(self, path: str, text: str) -> None:
        self.files[path] = self.files.get(path, "") + text

    async def exists(self, path: str) -> bool:
        return path in self.files

    async def list(self, path: str = "") -> list[str]:
        return sorted(self.files)

    async def remove(self, path: str) -> None:
        del self.files[path]

    async def size(self, path: str) -> int:
        return len(self.files[path])


async def test_a_protocol_only_workspace_is_read_each_time_and_edits_are_seen() -> None:
    ws = DictWorkspace()
    ws.files["MEMORY.md"] = "likes trains"

    class Provider:
        @hookimpl
        def hookagent_workspace(self, ctx: RuntimeContext) -> DictWorkspace:
            return ws

    memory = MemoryPlugin()
    model = ScriptedModel(default="ok")
    config = AgentConfig(
        model=model,
        plugins=[Provider(), memory],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    async with config.build() as agent:
        await agent.call("one", ctx())
        await agent.call("two", ctx())
        assert memory.cache.renders == 1 and ws.reads == 6  # read each time, rendered once
        ws.files["MEMORY.md"] = "likes boats"
        await agent.call("three", ctx())
    assert "likes trains" in (model.requests[1].system or "")
    assert "likes boats" in (model.requests[2].system or "")
    assert memory.cache.renders == 2


async def test_a_file_too_large_for_the_workspace_is_said_not_fatal(tmp_path: Path) -> None:
    (user_dir(tmp_path) / "MEMORY.md").write_text("x" * 5000)
    model = ScriptedModel(["ok"])
    config = AgentConfig(
        model=model,
        plugins=[WorkspacePlugin(url=str(tmp_path), max_file_bytes=1000), MemoryPlugin()],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    async with config.build() as agent:
        assert (await agent.call("hi", ctx())).text == "ok"
    assert (
        "[memory: MEMORY.md could not be read: WorkspaceLimitExceeded: read 'MEMORY.md': 5000 bytes"
        in (model.requests[0].system or "")
    )


class VersionedDict(DictWorkspace):
    """A provider with the optional single ``version(path)``: checked, not read, when the
    versions did not move."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: dict[str, int] = {}

    async def version(self, path: str) -> int | None:
        return self.marks.get(path) if path in self.files else None

    async def write_text(self, path: str, text: str) -> None:
        self.files[path] = text
        self.marks[path] = self.marks.get(path, 0) + 1


async def test_a_workspace_with_version_is_read_only_when_a_version_moves() -> None:
    ws = VersionedDict()
    await ws.write_text("AGENTS.md", "be brief")

    class Provider:
        @hookimpl
        def hookagent_workspace(self, ctx: RuntimeContext) -> VersionedDict:
            return ws

    model = ScriptedModel(default="ok")
    config = AgentConfig(
        model=model, plugins=[Provider(), MemoryPlugin()],
        state_store=InMemoryAgentStateStore(), autoload_plugins=False,
    )  # fmt: skip
    async with config.build() as agent:
        await agent.call("one", ctx())
        await agent.call("two", ctx())
        assert ws.reads == 1  # only AGENTS.md exists; read once, then its version answered
        await ws.write_text("AGENTS.md", "be verbose")
        await agent.call("three", ctx())
    assert ws.reads == 2
    assert "be brief" in (model.requests[1].system or "")
    assert "be verbose" in (model.requests[2].system or "")


async def test_the_installed_plugin_works_only_for_configurations_that_name_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "MEMORY.md").write_text("likes trains\n")
    workspace = {"workspace": {"url": str(tmp_path), "scope": "shared"}}
    for options, seen in (({}, False), ({"memory": {}}, True)):
        model = ScriptedModel(default="ok")
        config = AgentConfig(  # autoloaded: the entry points' instances of both plugins
            model=model,
            state_store=InMemoryAgentStateStore(),
            plugin_options={**workspace, **options},
        )
        await config.build().call("hi", ctx())
        assert ("likes trains" in (model.requests[0].system or "")) is seen, options
