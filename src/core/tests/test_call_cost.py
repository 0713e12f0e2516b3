"""A call costs what it adds: counted, never timed.

The stored history is planted as a log that counts every message read from it; a call on a
history of 10,000 messages must read, encode and copy exactly as much as one on 1,000 (the
few messages it adds, and the tail the kernel checks for open tool calls). Request-shaping
plugins that change their request's messages still work, and never reach the stored state.
"""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import (
    AgentConfig,
    AgentState,
    HistoryView,
    InMemoryAgentStateStore,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    TextBlock,
    ToolUseBlock,
    hookimpl,
)
from hookagent.codec import encode_head
from hookagent.store import memory as memory_store
from hookagent.store.memory import _Entry
from hookagent.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.anyio
USER, SESSION = "u", "s"


class CountingLog(list[Msg]):
    """A store log that counts the messages read from it (slices, iteration, copies)."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        CountingLog.reads += len(got) if isinstance(index, slice) else 1
        return got

    def __iter__(self) -> Any:
        CountingLog.reads += len(self)
        return super().__iter__()

    def copy(self) -> list[Msg]:
        CountingLog.reads += len(self)
        return super().copy()


class LookupModel:
    """After a user message, one tool call; after its result, the final text."""

    name = "lookup-model"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        self.requests.append(request)
        last = request.messages[-1]
        if last.role == "user":
            return ModelResponse(
                Msg.assistant([ToolUseBlock(f"c{len(self.requests)}", "lookup", {"key": 1})])
            )
        return ModelResponse(Msg.assistant([TextBlock(f"answer after {last.role}")]))


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"v{key}"


def history_of(turns: int) -> list[Msg]:
    out: list[Msg] = []
    for n in range(turns):
        out += [Msg.user(f"question {n}"), Msg.assistant(f"answer {n}")]
    return out


def plant(store: InMemoryAgentStateStore, messages: list[Msg]) -> CountingLog:
    log = CountingLog(messages)
    head = encode_head(AgentState(session_id=SESSION, user_id=USER))
    store._data.setdefault(USER, {}).setdefault(SESSION, {})["agent_state"] = _Entry(
        1, head, log, len(log)
    )
    return log


async def cost_of_calls(history_len: int, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(messages read from the stored log, messages encoded) for each of three calls, each
    on a freshly built agent (what a web request does), at a history of ``history_len``."""
    store = InMemoryAgentStateStore()
    log = plant(store, history_of(history_len // 2))
    encoded = [0]
    real_encode = memory_store.encode_msg

    def counting_encode(msg: Msg) -> bytes:
        encoded[0] += 1
        return real_encode(msg)

    monkeypatch.setattr(memory_store, "encode_msg", counting_encode)
    config = AgentConfig(
        model=LookupModel(), tools=[lookup], state_store=store, autoload_plugins=False
    )
    costs = []
    for n in range(3):
        CountingLog.reads, encoded[0] = 0, 0
        async with config.build() as agent:
            await agent.call(f"call {n}", RuntimeContext(user_id=USER, session_id=SESSION))
        costs.append((CountingLog.reads, encoded[0]))
    got = await store.get_versioned(USER, SESSION)
    assert got.state is not None and len(got.state.context) == history_len + 3 * 4
    assert store._data[USER][SESSION]["agent_state"].log is log  # appended to, never copied
    return costs


async def test_a_call_reads_and_encodes_the_same_at_1000_and_10000_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = await cost_of_calls(1_000, monkeypatch)
    large = await cost_of_calls(10_000, monkeypatch)
    assert small == large
    for reads, encoded in large:
        assert encoded == 4  # the call's user message, tool call, tool result, reply
        assert reads <= 4  # the loaded tail checked for open tool calls; no copy, no walk


async def test_the_model_request_shares_the_history_until_a_shaper_changes_it() -> None:
    store = InMemoryAgentStateStore()
    plant(store, history_of(5_000))
    seen: list[bool] = []

    class Reader:
        @hookimpl
        def hookagent_build_model_request(self, request: ModelRequest) -> None:
            assert isinstance(request.messages, HistoryView)
            seen.append(request.messages.copied)
            _ = request.messages[-1], len(request.messages), request.messages[-3:]

    model = LookupModel()
    config = AgentConfig(
        model=model, tools=[lookup], state_store=store, plugins=[Reader()], autoload_plugins=False
    )
    CountingLog.reads = 0
    await config.build().call("hello", RuntimeContext(user_id=USER, session_id=SESSION))
    assert seen == [False, False]  # read, never copied
    assert all(not r.messages.copied for r in model.requests)  # type: ignore[attr-defined]
    assert CountingLog.reads <= 8
    first, second = model.requests
    assert len(first.messages) == 10_001 and len(second.messages) == 10_003  # snapshots


async def test_shapers_that_change_the_messages_do_not_reach_the_stored_state() -> None:
    store = InMemoryAgentStateStore()
    plant(store, history_of(3))

    class Inserts:
        @hookimpl
        def hookagent_build_model_request(self, request: ModelRequest) -> None:
            request.messages.insert(0, Msg.system("transient view"))
            request.messages.append(Msg.user("transient reminder"))
            request.messages[1] = Msg.user("rewritten first message")

    class Replaces:
        @hookimpl(trylast=True)
        def hookagent_build_model_request(self, request: ModelRequest) -> None:
            request.messages = [*request.messages, Msg.user("replaced list")]

    model = ScriptedModel([tool_call("lookup", key=1), "done"])
    config = AgentConfig(
        model=model,
        tools=[lookup],
        state_store=store,
        plugins=[Inserts(), Replaces()],
        autoload_plugins=False,
    )
    ctx = RuntimeContext(user_id=USER, session_id=SESSION)
    await config.build().call("hello", ctx)
    for request in model.requests:
        texts = [m.text for m in request.messages]
        assert texts[0] == "transient view" and texts[1] == "rewritten first message"
        assert texts[-2:] == ["transient reminder", "replaced list"]
    got = await store.get_versioned(USER, SESSION)
    assert got.state is not None
    stored = [m.text for m in got.state.context]
    assert stored[:6] == [m.text for m in history_of(3)]
    assert stored[6] == "hello" and len(stored) == 10
    assert not any("transient" in t or "replaced" in t or "rewritten" in t for t in stored)
    # the second request saw the tool result appended after the first one, not its changes
    assert [m.role for m in model.requests[1].messages][-4:] == [
        "assistant",
        "tool",
        "user",
        "user",
    ]
