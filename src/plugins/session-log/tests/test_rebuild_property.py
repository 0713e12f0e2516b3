"""Rebuilt state == live state, after random runs: tools, interrupts, suspensions answered
or superseded, section changes (tasks, permissions), cleared contexts."""

from __future__ import annotations

from typing import Any

import anyio
from hookagent import (
    Agent,
    Approve,
    Middleware,
    ModelRequest,
    ModelResponse,
    Msg,
    Reject,
    RuntimeContext,
    ask,
    hookimpl,
)
from hookagent.codec import encode_state
from hookagent.sessionlog import InMemorySessionLog
from hookagent.testing import tool_call
from hookagent_session_log import AdminRefused
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionlog_support import ctx, make_config


class Rules:
    """A model that follows the last user message: tool..., ask..., stop..., else a reply."""

    async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(Msg.assistant(f"done after {len(request.messages)}"))
        text = last.text
        for word, tool in (("tool", "lookup"), ("ask", "guarded"), ("stop", "stopper")):
            if text.startswith(word):
                return ModelResponse(
                    tool_call(tool, key=len(text)) if tool == "lookup" else tool_call(tool)
                )
        return ModelResponse(Msg.assistant("ok " + text))


async def guarded() -> str:
    """Needs a person's yes."""
    return "guarded ran"


async def stopper(ctx: RuntimeContext) -> str:
    """Interrupts its own run."""
    agent = ctx.get(Agent)
    assert agent is not None
    agent.interrupt(ctx.user_id, ctx.session_id)
    await anyio.sleep(0)
    return "stopped"


class Asks:
    @hookimpl
    def hookagent_wrap_tool_call(self) -> Middleware:
        async def mw(call: Any, ctx: Any, call_next: Any) -> Any:
            if call.use.name == "guarded" and not call.approved:
                return ask(call, "may I?")
            return await call_next(call)

        return Middleware(mw, order=150)


class Live:
    """What the run saved, as bytes, at after_persist."""

    def __init__(self) -> None:
        self.saved: bytes = b""

    @hookimpl
    def hookagent_after_persist(self, state: Any, ctx: Any, version: int) -> None:
        self.saved = encode_state(state)


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("call"), st.sampled_from(["hello", "tool a", "ask b", "stop c", "tool dd"])
        ),
        st.tuples(st.just("answer"), st.sampled_from(["approve", "reject"])),
        st.tuples(
            st.just("section"),
            st.sampled_from(["tasks_context", "permission_context", "plan_mode_context"]),
        ),
        st.tuples(st.just("clear"), st.just("")),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_rebuilt_state_is_the_live_state(ops: list[tuple[str, str]]) -> None:
    anyio.run(_scenario, ops)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_rebuilt_state_is_the_live_state_with_a_segment_every_two_messages(
    ops: list[tuple[str, str]],
) -> None:
    """The same with history segments cut at every quiet point (K=2): a cold load reads
    the segments the checkpoint names and the commits after them."""
    anyio.run(_scenario, ops, 2)


async def _scenario(ops: list[tuple[str, str]], k: int = 256) -> None:
    log = InMemorySessionLog()
    live = Live()
    options = {"plugin_options": {"session-log": {"segment_messages": k}}}
    cfg = make_config(
        log, Rules(), tools=[guarded, stopper, _lookup()], plugins=[Asks(), live], **options
    )
    agent = cfg.build()
    for i, (op, arg) in enumerate(ops):
        if op == "call":
            await agent.call(arg, ctx())
        elif op == "answer":
            pending = await agent.pending_interactions("u", "s")
            if not pending:
                continue
            answer = (
                Approve(pending[0].tool_use_id)
                if arg == "approve"
                else Reject(pending[0].tool_use_id)
            )
            await agent.call(None, ctx(), answers=[answer])
        elif op == "section":
            await agent.update_agent_state(
                "u",
                "set",
                lambda s, n=arg, v=i: s.put_section(n, {"v": v}),
                session_id="s",
                create=True,
            )
        else:
            try:
                await agent.clear_context("u", "s")
            except AdminRefused:  # a suspended turn waits: the history stays
                assert await agent.pending_interactions("u", "s")
                continue
        if not live.saved:
            continue
        fresh = make_config(log, Rules(), tools=[guarded, stopper, _lookup()], **options).build()
        rebuilt = await fresh.get_agent_state("u", "s")
        assert _without_admin_log(encode_state(rebuilt)) == _without_admin_log(live.saved), (
            op,
            arg,
        )
        warm = await agent.get_agent_state("u", "s")
        assert encode_state(warm) == encode_state(rebuilt)
    if k < 256:
        SEGMENTED.append(
            any(e.type == "history/segment" for e in await log.read_after("u", "s", 0))
        )


SEGMENTED: list[bool] = []
"""Whether each example with small segments cut one (some must: see the test below)."""


def test_the_small_segments_were_cut() -> None:
    if not SEGMENTED:
        test_rebuilt_state_is_the_live_state_with_a_segment_every_two_messages()
    assert any(SEGMENTED)


def _lookup() -> Any:
    from sessionlog_support import lookup

    return lookup


def _without_admin_log(data: bytes) -> bytes:
    import orjson

    doc = orjson.loads(data)
    doc.pop("admin_log", None)  # an admin change's note carries its time: compared apart
    return orjson.dumps(doc)
