"""Validation before commit: a refused compaction leaves the stored history byte-identical;
the call goes on when it fits and fails typed when it does not; an interrupt mid-summary
propagates and changes nothing."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hookagent import (
    SUMMARY,
    GenerateReason,
    ModelError,
    ModelRequest,
    Msg,
    hookimpl,
)
from hookagent.codec import encode_msg
from hookagent.testing import ScriptedModel
from hookagent_compaction.errors import ContextBudgetExceeded
from hookagent_compaction.validate import CompactionProposal

from .conftest import Events, ctx, make

pytestmark = pytest.mark.anyio
SEED = 10


async def seed(config: Any, n: int = SEED, size: int = 40) -> list[bytes]:
    """A stored history of ``n`` messages; returns its encoded messages."""
    store = await config.kernel.store()
    agent = config.build()
    state = await agent.get_agent_state("ann", "s1")
    for i in range(n):
        text = f"{i:03d} " + "z" * size
        state.context.append(Msg.user(text) if i % 2 == 0 else Msg.assistant(text))
    await store.save_if_version("ann", "s1", state, 0)
    return [encode_msg(m) for m in state.context]


async def stored(config: Any) -> tuple[list[bytes], str | None]:
    got = await (await config.kernel.store()).get_versioned("ann", "s1")
    assert got.state is not None
    return [encode_msg(m) for m in got.state.context], got.state.summary


class Refuses:
    def __init__(self, reason: Any) -> None:
        self.reason = reason
        self.seen: list[CompactionProposal] = []

    @hookimpl
    async def hookagent_validate_compaction(self, proposal: CompactionProposal) -> Any:
        self.seen.append(proposal)
        return self.reason


def failing(request: ModelRequest) -> Any:
    raise ModelError("the summariser is down")


SUMMARISERS = {
    "raises": lambda: ScriptedModel(default=failing),
    "empty": lambda: ScriptedModel(default="   "),
    "over budget": lambda: ScriptedModel(default="word " * 400),  # ~500 tokens > 100
    "not a response": lambda: ScriptedModel(default=lambda r: 42),
}
REASONS = {
    "raises": "the summariser failed: ModelError: the summariser is down",
    "empty": "the summary is empty",
    "over budget": "over its budget of 100",
    "not a response": "the summariser failed: ModelError: the summary model 'scripted' returned",
}
OPTIONS = {"trigger_messages": 8, "keep_messages": 4, "summary_max_tokens": 100}


@pytest.mark.parametrize("case", list(SUMMARISERS))
async def test_a_refused_summary_changes_nothing_and_the_call_completes_when_it_fits(case):
    model = ScriptedModel(default="fine")
    events = Events()
    config = make(model, events, options={**OPTIONS, "summary_model": SUMMARISERS[case]()})
    before = await seed(config)
    async with config.build() as agent:
        reply = await agent.call("one more", ctx())
        after, summary = await stored(config)
    assert reply.text == "fine"
    assert len(model.requests[0].messages) == SEED + 1  # sent uncompacted
    assert after[:SEED] == before and summary is None  # byte-identical, nothing committed
    assert len(after) == SEED + 2
    (finished,) = events.data("compaction_finished")
    assert finished["accepted"] is False and REASONS[case] in finished["reason"]


async def test_a_validator_refusal_is_not_committed():
    model = ScriptedModel(default="fine")
    refuses = Refuses("a fact the summary lost")
    summariser = ScriptedModel(default="a fine summary")
    config = make(model, refuses, options={**OPTIONS, "summary_model": summariser})
    before = await seed(config)
    async with config.build() as agent:
        await agent.call("one more", ctx())
        await agent.call("and another", ctx())  # one refusal per run: asked again next run
    after, summary = await stored(config)
    assert after[:SEED] == before and summary is None
    assert len(refuses.seen) == 2 and len(summariser.requests) == 2
    proposal = refuses.seen[0]
    assert proposal.summary == "a fine summary" and proposal.budget_tokens == 100
    assert proposal.messages[0].text.endswith("a fine summary")
    assert [m.text for m in proposal.messages[1:]] == [
        *(m.text for m in proposal.history[-4:]),
    ]
    assert proposal.summarised == proposal.history[:-4]
    assert (proposal.user_id, proposal.session_id) == ("ann", "s1")


async def test_a_refusal_over_the_window_fails_typed_naming_the_budget():
    model = ScriptedModel(default="never asked")
    model.context_window = 400  # type: ignore[attr-defined]
    options = {**OPTIONS, "trigger_tokens": 200, "summary_model": ScriptedModel(default=failing)}
    config = make(model, options=options)
    before = await seed(config, size=160)  # ~45 tokens a message, ~450 in all
    async with config.build() as agent:
        with pytest.raises(ContextBudgetExceeded) as info:
            await agent.call("one more", ctx())
    err = info.value
    assert err.budget == 400 and err.tokens > 400 and "the summariser failed" in err.reason
    assert "over its budget of 400 tokens" in str(err)
    assert model.requests == []  # the model was never sent a request that cannot fit
    after, summary = await stored(config)
    assert after[:SEED] == before and summary is None  # the failed call saved its input only
    assert len(after) == SEED + 1


async def test_the_agents_own_model_summarises_through_the_chain():
    def answer(request: ModelRequest) -> str:
        return "the gist" if request.purpose == SUMMARY else "fine"

    model = ScriptedModel(default=answer, stream=True)
    events = Events()
    config = make(model, events, options=OPTIONS)
    await seed(config)
    async with config.build() as agent:
        run = agent.prepare_call("one more", ctx()).start()
        kinds = [e.kind async for e in run.events()]
        await run.result()
    after, summary = await stored(config)
    assert [r.purpose for r in model.requests] == [SUMMARY, "reasoning"]
    assert summary == "the gist" and len(after) == 4 + 1 + 1  # summary, tail of 4, reply
    assert kinds.count("model_delta") == 1  # the reply's; the summary's text is not streamed


async def test_an_interrupt_mid_summary_propagates_and_changes_nothing():
    started = anyio.Event()

    class Stuck:
        name = "stuck"

        async def generate(self, request: ModelRequest, ctx: Any) -> Any:
            started.set()
            await anyio.sleep_forever()

    model = ScriptedModel(default="never asked")
    events = Events()
    config = make(model, events, options={**OPTIONS, "summary_model": Stuck()})
    before = await seed(config)
    async with config.build() as agent:
        run = agent.prepare_call("one more", ctx()).start()
        with anyio.fail_after(5):
            await started.wait()
        assert agent.interrupt("ann", "s1")
        reply = await run.result()
    assert reply.metadata["generate_reason"] == GenerateReason.INTERRUPTED.value
    assert model.requests == []
    after, summary = await stored(config)
    assert after[:SEED] == before and summary is None
    assert events.kinds() == ["compaction_started"]  # no finished: it never finished
