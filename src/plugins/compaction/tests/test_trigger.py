"""Triggers and the durable effect, through real agents (scripted models, in-memory store)."""

from __future__ import annotations

import pytest
from hookagent import (
    REASONING,
    SUMMARY,
    ConfigurationError,
    ModelRequest,
    Msg,
)
from hookagent.testing import ScriptedModel, tool_call
from hookagent_compaction.cut import PINNED, SUMMARY_KEY
from hookagent_compaction.errors import CompactionOptionsError
from hookagent_compaction.summary import MESSAGES, PREVIOUS, SUMMARY_HEADER
from hookagent_model_demo import DemoModel

from .conftest import Events, ctx, make

pytestmark = pytest.mark.anyio


def numbered(request: ModelRequest) -> str:
    return f"answer to {request.messages[-1].text}"


async def test_the_message_trigger_fires_at_the_threshold_and_keeps_the_tail():
    model = ScriptedModel(default=numbered)
    summariser = ScriptedModel(default="the gist of it")
    events = Events()
    options = {"trigger_messages": 10, "keep_messages": 4, "summary_model": summariser}
    config = make(model, events, options=options)
    async with config.build() as agent:
        for i in range(5):
            await agent.call(f"q{i}", ctx())
        # requests of 1, 3, 5, 7, 9 messages: under the trigger, nothing summarised
        assert [len(r.messages) for r in model.requests] == [1, 3, 5, 7, 9]
        assert summariser.requests == [] and events.kinds() == []
        await agent.call("q5", ctx())  # 11 messages reach the trigger of 10
        state = await agent.get_agent_state("ann", "s1")
    (summary_request,) = summariser.requests
    assert summary_request.purpose == SUMMARY and summary_request.tools == []
    transcript = summary_request.messages[0].text
    assert transcript.startswith(MESSAGES) and "### user\nq0" in transcript
    assert "q3" in transcript and "answer to q2" in transcript and "q4" not in transcript
    sent = model.requests[-1]
    assert sent.purpose == REASONING
    assert [m.text for m in sent.messages[1:]] == ["answer to q3", "q4", "answer to q4", "q5"]
    assert sent.messages[0].text == f"{SUMMARY_HEADER}\nthe gist of it"
    # the durable effect: one summary message at the head, the summary section set
    assert [m.text for m in state.context] == [
        f"{SUMMARY_HEADER}\nthe gist of it",
        "answer to q3",
        "q4",
        "answer to q4",
        "q5",
        "answer to q5",
    ]
    assert SUMMARY_KEY in state.context[0].metadata and state.summary == "the gist of it"
    assert events.kinds() == ["compaction_started", "compaction_finished"]
    (started,) = events.data("compaction_started")
    (finished,) = events.data("compaction_finished")
    assert started["trigger"] == "messages" and started["messages"] == 11
    assert started["summarised"] == 7
    assert finished["accepted"] is True
    assert (finished["before_messages"], finished["after_messages"]) == (11, 5)
    assert finished["after_tokens"] < finished["before_tokens"]
    assert finished["summarised"] == 7 and finished["summary_tokens"] > 0


async def test_the_token_trigger_fires_on_size_alone():
    model = ScriptedModel(default="ok")
    summariser = ScriptedModel(default="short")
    options = {
        "trigger_messages": None,
        "trigger_tokens": 400,
        "keep_tokens": 150,
        "summary_model": summariser,
        "summary_max_tokens": 100,
    }
    config = make(model, options=options)
    kernel = config.kernel
    big = "x" * 400  # 100 tokens + 4 of overhead
    async with config.build() as agent:
        await agent.call(big, ctx())  # 104
        await agent.call(big, ctx())  # 104 + 5 + 104 = 213
        await agent.call(big, ctx())  # 322
        assert summariser.requests == []
        await agent.call(big, ctx())  # 431 >= 400: compacted
        state = await agent.get_agent_state("ann", "s1")
    assert len(summariser.requests) == 1
    tokens = [kernel.count_tokens(r.messages) for r in model.requests]
    assert tokens[:3] == [104, 213, 322] and tokens[3] < 400
    # keep_tokens alone: the tail is the longest suffix within 150 tokens (104 + 5)
    assert [m.text for m in state.context[1:]] == ["ok", big, "ok"]


async def test_the_token_trigger_defaults_to_the_models_window():
    model = DemoModel(delay=0, context_window=40_000)  # trigger: 40,000 - 20,000 tokens
    config = make(model, options={"trigger_messages": None})
    rt_window = config.kernel.context_window
    assert rt_window == 40_000
    page = "word " * 800  # 1,004 tokens a message
    events = Events()
    config = make(model, events, options={"trigger_messages": None, "keep_messages": 4})
    async with config.build() as agent:
        n = 0
        while not events.kinds():
            n += 1
            await agent.call(f"{page} {n}", ctx())
        state = await agent.get_agent_state("ann", "s1")
    (started,) = events.data("compaction_started")
    assert started["trigger"] == "tokens" and 20_000 <= started["tokens"] < 20_000 + 1_200
    assert state.summary is not None and state.summary.startswith("[demo summary]")
    assert state.context[0].text.startswith(SUMMARY_HEADER)


async def test_summaries_are_chained():
    model = ScriptedModel(default=numbered)
    texts = iter(["first summary", "second summary"])
    summariser = ScriptedModel(default=lambda request: next(texts))
    options = {"trigger_messages": 8, "keep_messages": 2, "summary_model": summariser}
    async with make(model, options=options).build() as agent:
        for i in range(8):
            await agent.call(f"q{i}", ctx())
        state = await agent.get_agent_state("ann", "s1")
    first, second = summariser.requests
    assert PREVIOUS not in first.messages[0].text
    assert second.messages[0].text.startswith(f"{PREVIOUS}\nfirst summary\n\n{MESSAGES}")
    # the earlier summary message is not rendered again as a message to summarise
    assert SUMMARY_HEADER not in second.messages[0].text
    assert state.summary == "second summary"
    assert [m.text for m in state.context].count(f"{SUMMARY_HEADER}\nsecond summary") == 1
    assert sum(1 for m in state.context if SUMMARY_KEY in m.metadata) == 1
    assert state.context[0].text == f"{SUMMARY_HEADER}\nsecond summary"


async def test_a_compaction_in_the_middle_of_a_turn_projects_its_later_requests():
    """The tool loop's second request is projected through the compaction the first made;
    the run's save commits it once, with the tool pair intact."""

    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    model = ScriptedModel([tool_call("lookup", key="k"), "done"])
    summariser = ScriptedModel(default="earlier talk")
    options = {"trigger_messages": 6, "keep_messages": 2, "summary_model": summariser}
    config = make(model, options=options, tools=[lookup])
    async with config.build() as agent:
        state = await agent.get_agent_state("ann", "s1")
        store = await config.kernel.store()
        for i in range(6):
            state.context.append(Msg.user(f"old {i}") if i % 2 == 0 else Msg.assistant(f"re {i}"))
        await store.save_if_version("ann", "s1", state, 0)
        await agent.call("look k up", ctx())
        state = await agent.get_agent_state("ann", "s1")
    first, second = model.requests
    assert [m.text for m in first.messages] == [
        f"{SUMMARY_HEADER}\nearlier talk",
        "re 5",
        "look k up",
    ]
    assert [m.role for m in second.messages] == ["user", "assistant", "user", "assistant", "tool"]
    assert second.messages[0] is first.messages[0]  # the same summary, no second compaction
    assert len(summariser.requests) == 1
    assert [m.role for m in state.context] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert state.context[0].text == f"{SUMMARY_HEADER}\nearlier talk"


async def test_pinned_messages_survive_verbatim():
    model = ScriptedModel(default=numbered)
    summariser = ScriptedModel(default="gist")
    options = {"trigger_messages": 8, "keep_messages": 2, "summary_model": summariser}
    pinned = Msg.user("the budget is 42 EUR, never more", metadata={PINNED: True})
    async with make(model, options=options).build() as agent:
        await agent.call([pinned], ctx())
        for i in range(4):
            await agent.call(f"q{i}", ctx())
        state = await agent.get_agent_state("ann", "s1")
    assert len(summariser.requests) == 1
    assert state.context[1] == pinned  # right after the summary, byte for byte
    transcript = summariser.requests[0].messages[0].text
    assert "### user\nthe budget is 42" not in transcript  # kept, so not summarised
    assert "### assistant\nanswer to the budget is 42" in transcript


async def test_nothing_is_compacted_when_disabled_or_for_other_purposes():
    model = ScriptedModel(default="ok")
    summariser = ScriptedModel(default="gist")
    options = {
        "trigger_messages": 2,
        "keep_messages": 1,
        "summary_model": summariser,
        "enabled": False,
    }
    async with make(model, options=options).build() as agent:
        for i in range(3):
            await agent.call(f"q{i}", ctx())
    assert summariser.requests == [] and len(model.requests[-1].messages) == 5


def test_bad_options_refuse_the_configuration():
    with pytest.raises(CompactionOptionsError, match="keep_messages") as info:
        make(ScriptedModel(), options={"keep_messages": 60}).build()
    assert isinstance(info.value, ConfigurationError)
    # a window too small for the summary budget is refused once the model is known
    with pytest.raises(CompactionOptionsError, match=r"summary_max_tokens \(4000\)"):
        make(DemoModel(context_window=6_000), options={}).build()
