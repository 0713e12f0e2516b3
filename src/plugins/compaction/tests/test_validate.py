"""Validation before commit: the built-in checks, the default validator, validator results."""

from __future__ import annotations

import pytest
from hookagent.messages import Msg
from hookagent_compaction.cut import PINNED
from hookagent_compaction.summary import summary_message
from hookagent_compaction.validate import (
    CompactionProposal,
    check_summary,
    pinned_ids_survive,
    run_validators,
)

pytestmark = pytest.mark.anyio


def proposal(history: list[Msg], messages: list[Msg]) -> CompactionProposal:
    return CompactionProposal(
        history=tuple(history),
        messages=tuple(messages),
        summarised=tuple(m for m in history if m not in messages),
        summary="s",
        previous_summary=None,
        summary_tokens=1,
        budget_tokens=10,
    )


def test_empty_and_over_budget_summaries_are_refused():
    assert check_summary(None, 0, 10) == "the summary is empty"
    assert check_summary(" \n", 1, 10) == "the summary is empty"
    assert check_summary("fine", 11, 10) == "the summary holds 11 tokens, over its budget of 10"
    assert check_summary("fine", 10, 10) is None


def test_the_default_validator_refuses_a_lost_pinned_message():
    pinned = Msg.user("the budget is 42", metadata={PINNED: True})
    other = Msg.user("chatter")
    head = summary_message("s", 2)
    assert pinned_ids_survive(proposal([pinned, other], [head, pinned])) is None
    reason = pinned_ids_survive(proposal([pinned, other], [head, other]))
    assert reason == f"pinned message(s) {pinned.id} would be lost"
    # a message that is only similar (another id) does not count as the pinned one
    twin = Msg.user("the budget is 42", metadata={PINNED: True})
    assert pinned_ids_survive(proposal([pinned], [head, twin])) is not None


async def test_validators_run_in_order_and_the_first_refusal_wins():
    seen: list[str] = []

    def ok(proposal):
        seen.append("ok")

    async def no(proposal):
        seen.append("no")
        return "facts were lost"

    def never(proposal):
        seen.append("never")
        return "second"

    p = proposal([Msg.user("a")], [Msg.user("b")])
    assert await run_validators([ok, no, never], p) == "facts were lost"
    assert seen == ["ok", "no"]
    assert await run_validators([ok], p) is None


async def test_a_validator_returning_something_else_refuses():
    p = proposal([Msg.user("a")], [Msg.user("b")])
    assert await run_validators([lambda proposal: False], p) == (
        "a validator refused the summary (returned False)"
    )
    assert "returned ''" in (await run_validators([lambda proposal: ""], p) or "")


async def test_hook_hookagent_validate_compaction():
    """The hook through a real agent: each implementation is asked, the first refusal wins
    and is reported; with none refusing, the compaction is committed."""
    from hookagent import hookimpl
    from hookagent.testing import ScriptedModel

    from .conftest import Events, ctx, make

    asked: list[str] = []

    class Accepts:
        @hookimpl
        def hookagent_validate_compaction(self, proposal):
            asked.append("accepts")

    class Refuses:
        @hookimpl
        async def hookagent_validate_compaction(self, proposal):
            asked.append("refuses")
            return "no thanks" if asked.count("refuses") == 1 else None

    events = Events()
    summariser = ScriptedModel(default="gist")
    options = {"trigger_messages": 6, "keep_messages": 2, "summary_model": summariser}
    config = make(ScriptedModel(default="ok"), Accepts(), Refuses(), events, options=options)
    async with config.build() as agent:
        for i in range(4):
            await agent.call(f"q{i}", ctx())
        assert (await agent.get_agent_state("ann", "s1")).summary is None
        await agent.call("q4", ctx())  # the next run asks again; now both accept
        state = await agent.get_agent_state("ann", "s1")
    # the last registered is asked first; a refusal stops the asking
    assert asked == ["refuses", "refuses", "accepts"]
    reasons = [d.get("reason") for d in events.data("compaction_finished")]
    assert reasons == ["no thanks", None] and state.summary == "gist"
