"""Overflow recovery against a loopback OpenAI-compatible server: the provider's typed
``ContextLengthExceeded`` makes compaction run once (forced) and the request retried once."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import ContextLengthExceeded, Msg
from hookagent.codec import encode_msg
from hookagent_compaction.errors import ContextBudgetExceeded
from hookagent_compaction.summary import INSTRUCTIONS, MESSAGES, SUMMARY_HEADER
from hookagent_model_openai import OpenAIChatModel
from hookagent_model_openai.testing import error_reply, fake_openai_server, text_reply, text_stream

from .conftest import Events, ctx, make

pytestmark = pytest.mark.anyio
OVERFLOW = error_reply(
    400,
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9000 tokens.",
    code="context_length_exceeded",
    type="invalid_request_error",
)
SEEDED = 30


def model(srv: Any, stream: bool) -> OpenAIChatModel:
    return OpenAIChatModel.from_options(
        base_url=srv.base_url, model="test-model", timeout=5, max_retries=0, stream=stream
    )


def answer(text: str, stream: bool) -> Any:
    return text_stream([text]) if stream else text_reply(text)


async def seed(config: Any) -> list[bytes]:
    store = await config.kernel.store()
    state = await config.build().get_agent_state("ann", "s1")
    for i in range(SEEDED):
        state.context.append(Msg.user(f"u{i}") if i % 2 == 0 else Msg.assistant(f"a{i}"))
    await store.save_if_version("ann", "s1", state, 0)
    return [encode_msg(m) for m in state.context]


async def stored(config: Any) -> Any:
    got = await (await config.kernel.store()).get_versioned("ann", "s1")
    return got.state


@pytest.mark.parametrize("stream", [False, True])
async def test_context_length_exceeded_once_compacts_and_retries(stream: bool):
    script = [OVERFLOW, answer("the gist", stream), answer("answered", stream)]
    events = Events()
    with fake_openai_server(script) as srv:
        config = make(model(srv, stream), events)  # defaults: under every trigger
        await seed(config)
        async with config.build() as agent:
            reply = await agent.call("one more", ctx())
        await config.kernel.model.aclose()  # the provider's connections, in this loop
        first, summary, retry = (r.body for r in srv.requests)
    assert reply.text == "answered" and srv.attempts == 3
    assert len(first["messages"]) == SEEDED + 1
    assert summary["messages"][0] == {
        "role": "system",
        "content": INSTRUCTIONS.replace("{budget}", "4000"),
    }
    assert summary["messages"][1]["content"].startswith(MESSAGES)
    assert "tools" not in summary
    assert retry["messages"][0]["content"] == f"{SUMMARY_HEADER}\nthe gist"
    assert len(retry["messages"]) == 1 + 20  # the summary and the kept 20 (defaults)
    assert retry["messages"][-1]["content"] == "one more"
    state = await stored(config)
    assert state.summary == "the gist" and len(state.context) == 1 + 20 + 1
    (started,) = events.data("compaction_started")
    assert started["trigger"] == "overflow"


async def test_a_second_overflow_is_raised_and_the_compaction_still_kept():
    with fake_openai_server([OVERFLOW, text_reply("the gist"), OVERFLOW]) as srv:
        config = make(model(srv, False))
        await seed(config)
        async with config.build() as agent:
            with pytest.raises(ContextLengthExceeded) as info:
                await agent.call("one more", ctx())
        await config.kernel.model.aclose()
    assert type(info.value) is ContextLengthExceeded  # the provider's own: retried once only
    assert srv.attempts == 3
    state = await stored(config)  # the failed call saved its input on the compacted history
    assert state.summary == "the gist"
    assert [m.text for m in state.context[-2:]] == ["a29", "one more"]
    assert len(state.context) == 1 + 20  # the summary and the tail, which ends with the input


async def test_an_overflow_whose_summary_fails_is_typed_and_changes_nothing():
    refused = error_reply(400, "unknown parameter foo")
    with fake_openai_server([OVERFLOW, refused]) as srv:
        config = make(model(srv, False))
        before = await seed(config)
        async with config.build() as agent:
            with pytest.raises(ContextBudgetExceeded) as info:
                await agent.call("one more", ctx())
        await config.kernel.model.aclose()
    err = info.value
    assert err.budget is None and "the summariser failed" in err.reason
    assert isinstance(err.__cause__, ContextLengthExceeded)
    assert "refused it as over its context length" in str(err)
    assert srv.attempts == 2  # no retry of the reasoning request without a compaction
    state = await stored(config)
    assert [encode_msg(m) for m in state.context[:SEEDED]] == before and state.summary is None
