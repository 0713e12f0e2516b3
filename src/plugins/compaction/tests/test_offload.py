"""Offloading: a large tool result goes to the workspace with a preview and a marker;
excluded tools never; ``read_offloaded`` reads it back in pages; no workspace, one warning."""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import pytest
from hookagent import DataBlock, ModelRequest, TextBlock
from hookagent.store.ids import encode_id
from hookagent.testing import ScriptedModel, tool_call
from hookagent_compaction.offload import MARKER, OffloadSkippedWarning, offload_path

from .conftest import Provides, ctx, make

pytestmark = pytest.mark.anyio
BIG = "".join(f"line {i:06d}\n" for i in range(10_000))  # 120,000 characters


def dump() -> str:
    """A large report."""
    return BIG


def read_file(path: str) -> str:
    """Read a file (never offloaded: the listed exclusion)."""
    return BIG


def last_result(agent_state: Any) -> Any:
    return next(m for m in reversed(agent_state.context) if m.role == "tool").tool_results[0]


async def test_a_large_result_is_offloaded_with_a_preview_and_a_marker():
    ws = Provides()
    model = ScriptedModel([tool_call("dump"), "seen"])
    config = make(model, ws, tools=[dump], agent_id="bot")
    async with config.build() as agent:
        await agent.call("dump it", ctx())
        state = await agent.get_agent_state("ann", "s1")
    result = last_result(state)
    digest = hashlib.sha256(BIG.encode()).hexdigest()
    path = offload_path("bot", result.id, digest)
    assert path == f"large_tool_results/bot/{encode_id(result.id)}-{digest}"
    assert ws.roots["ann"].files == {path: BIG}  # the whole text, in the caller's workspace
    text, data = result.output
    assert isinstance(text, TextBlock) and isinstance(data, DataBlock)
    assert text.text.startswith(BIG[:2000]) and text.text.endswith(BIG[-2000:])
    assert f"{MARKER} {len(BIG) - 4000} of {len(BIG)} characters" in text.text
    assert f"read_offloaded(path={path!r}" in text.text
    assert len(text.text) < 4_500
    assert (data.url, data.name) == (f"memory://ws/ann/{path}", path)
    # the model saw the preview, not the whole result
    assert model.requests[1].messages[-1].tool_results[0] == result
    # and read_offloaded is offered from then on (the plugin's group is activated)
    assert "compaction" in state.tool_context.activated_groups
    assert "read_offloaded" not in [t.name for t in model.requests[0].tools]
    assert "read_offloaded" in [t.name for t in model.requests[1].tools]


async def test_the_model_reads_it_back_in_pages():
    ws = Provides()
    pages: list[str] = []

    def read_back(request: ModelRequest) -> Any:
        last = request.messages[-1]
        result = last.tool_results[0]
        if result.name == "dump":
            path = next(b.name for b in result.output if isinstance(b, DataBlock))
            return tool_call("read_offloaded", path=path, offset=0, limit=50_000)
        pages.append(result.text)
        if len(pages) == 1:
            path = result.text[1:].split(":")[0]
            return tool_call("read_offloaded", path=path, offset=100_000)
        return "read it all"

    model = ScriptedModel([tool_call("dump")], default=read_back)
    options = {"read_page_chars": 30_000, "offload_chars": 20_000}
    async with make(model, ws, tools=[dump], options=options, max_iterations=5).build() as agent:
        reply = await agent.call("dump it", ctx())
    assert reply.text == "read it all"
    first, second = pages
    header, body = first.split("\n", 1)
    assert header.endswith(f"characters 0-30000 of {len(BIG)}; next offset 30000]")
    assert body == BIG[:30_000]  # limit capped at read_page_chars
    header, body = second.split("\n", 1)
    assert header.endswith(f"characters 100000-{len(BIG)} of {len(BIG)}; end of the result]")
    assert body == BIG[100_000:]
    # its own reads are never offloaded, even over offload_chars (20,000 here)
    assert len(first) > 30_000 and MARKER not in first


async def test_read_offloaded_refuses_other_paths_and_tampered_files():
    ws = Provides()
    asked: list[str] = []

    def probe(request: ModelRequest) -> Any:
        last = request.messages[-1].tool_results[0]
        if last.name == "dump":
            path = next(b.name for b in last.output if isinstance(b, DataBlock))
            ws.roots["ann"].files[path] = BIG + "tampered"
            asked.append(path)
            return tool_call("read_offloaded", path=path)
        asked.append(last.text)
        if len(asked) == 2:
            return tool_call("read_offloaded", path="MEMORY.md")
        if len(asked) == 3:
            return tool_call("read_offloaded", path="large_tool_results/other-agent/x-" + "0" * 64)
        return "done"

    model = ScriptedModel([tool_call("dump")], default=probe)
    async with make(model, ws, tools=[dump], agent_id="bot", max_iterations=6).build() as agent:
        await agent.call("dump it", ctx())
    tampered, outside, other = asked[1:]
    assert "does not hold what was offloaded (its sha256 differs)" in tampered
    assert "'MEMORY.md' is not an offloaded result of this agent" in outside
    assert "is not an offloaded result of this agent" in other


async def test_excluded_tools_and_small_results_stay_whole():
    ws = Provides()
    model = ScriptedModel([tool_call("read_file", path="a"), tool_call("dump"), "ok"])
    options = {"offload_exclude": ["read_file"], "offload_chars": 200_000}
    async with make(model, ws, tools=[dump, read_file], options=options).build() as agent:
        await agent.call("read", ctx())
        state = await agent.get_agent_state("ann", "s1")
    results = [m.tool_results[0] for m in state.context if m.role == "tool"]
    assert [r.text for r in results] == [BIG, BIG]  # excluded; and under a raised threshold
    assert ws.roots == {} or ws.roots["ann"].files == {}


async def test_without_a_workspace_results_stay_and_one_warning_says_so():
    model = ScriptedModel([tool_call("dump"), tool_call("dump"), "ok", tool_call("dump"), "ok"])
    config = make(model, tools=[dump])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with config.build() as agent:
            await agent.call("dump twice", ctx())
            await agent.call("again", ctx())
            state = await agent.get_agent_state("ann", "s1")
    skipped = [w for w in caught if issubclass(w.category, OffloadSkippedWarning)]
    assert len(skipped) == 1 and "no workspace plugin is installed" in str(skipped[0].message)
    assert [m.tool_results[0].text for m in state.context if m.role == "tool"] == [BIG] * 3


async def test_the_same_result_twice_is_written_once():
    ws = Provides()
    model = ScriptedModel([tool_call("dump"), "ok"])
    config = make(model, ws, tools=[dump])
    async with config.build() as agent:
        await agent.call("dump", ctx())
        state = await agent.get_agent_state("ann", "s1")
        result = last_result(state)
        path = next(b.name for b in result.output if isinstance(b, DataBlock))
        # the same tool_use id and content again (a retried call): the file is already there
        from hookagent_compaction.offload import _offload
        from hookagent_compaction.runtime import runtime_for

        c = ctx()
        c.put(type(agent), agent)
        c.agent_state = state
        rt = runtime_for(c)
        assert rt is not None
        raw = type(result)(result.id, result.name, (TextBlock(BIG),))
        again = await _offload(rt, c, ws.roots["ann"], raw, BIG)
    assert again.output == result.output and ws.roots["ann"].writes == 1
    assert list(ws.roots["ann"].files) == [path]
