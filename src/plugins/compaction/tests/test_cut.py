"""The cut: keep limits, tool pairs, suspended steps, pinned messages (examples and properties)."""

from __future__ import annotations

from collections.abc import Sequence

from hookagent.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent_compaction.cut import (
    PINNED,
    SUMMARY_KEY,
    plan_cut,
    safe_cuts,
    tail_start,
    tool_ids,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def chars(msg: Msg) -> int:
    return sum(len(b.text) for b in msg.content if isinstance(b, TextBlock)) + 1


def use(i: str) -> ToolUseBlock:
    return ToolUseBlock(i, "lookup", {"key": i})


def result(i: str) -> ToolResultBlock:
    return ToolResultBlock(i, "lookup", (TextBlock(f"value {i}"),))


def exchange(n: int) -> list[Msg]:
    """One W1-like call: user, assistant with a tool call, tool result, final answer."""
    return [
        Msg.user(f"question {n}"),
        Msg.assistant([use(f"c{n}")]),
        Msg("tool", [result(f"c{n}")]),
        Msg.assistant(f"answer {n}"),
    ]


def history(calls: int) -> list[Msg]:
    return [m for n in range(calls) for m in exchange(n)]


def ids_split(prefix: Sequence[Msg], kept: Sequence[Msg]) -> set[str]:
    before = {t for m in prefix for t in tool_ids(m)}
    after = {t for m in kept for t in tool_ids(m)}
    return before & after


# ----------------------------------------------------------------------------- examples


def test_keep_messages_is_the_tail_when_it_starts_on_a_boundary():
    msgs = history(10)  # 40 messages
    cut = plan_cut(msgs, keep_messages=20, keep_tokens=None, tokens_of=chars)
    assert cut is not None and cut.index == 20
    assert cut.summarised == tuple(range(20)) and cut.pinned == () and cut.summaries == ()


def test_the_cut_moves_earlier_rather_than_split_a_tool_pair():
    msgs = history(10)
    # keeping 18 would start at index 22: the tool result of the call whose use is at 21
    cut = plan_cut(msgs, keep_messages=18, keep_tokens=None, tokens_of=chars)
    assert cut is not None
    assert cut.index == 21  # the assistant message with the tool call stays with its result
    assert not ids_split(msgs[: cut.index], msgs[cut.index :])


def test_parallel_results_in_separate_messages_stay_together():
    msgs = [
        Msg.user("go"),
        Msg.assistant([use("a"), use("b")]),
        Msg("tool", [result("a")]),
        Msg("tool", [result("b")]),
        Msg.assistant("done"),
    ]
    # keep 2: would cut between the two results; the whole exchange must move together
    cut = plan_cut(msgs, keep_messages=2, keep_tokens=None, tokens_of=chars)
    assert cut is not None and cut.index == 1
    assert safe_cuts(msgs) == [True, True, False, False, True, True]


def test_keep_tokens_bounds_the_tail_and_the_last_message_always_stays():
    msgs = [Msg.user("x" * 100), Msg.assistant("y" * 10), Msg.user("z" * 10)]
    assert tail_start(msgs, None, 25, chars) == 1  # 11 + 11 fit, 101 does not
    assert tail_start(msgs, None, 5, chars) == 2  # even over the budget, the last stays
    cut = plan_cut(msgs, keep_messages=None, keep_tokens=5, tokens_of=chars)
    assert cut is not None and cut.index == 2


def test_both_limits_keep_the_shorter_tail():
    msgs = [Msg.user("a" * 9) for _ in range(10)]  # 10 tokens each
    assert tail_start(msgs, 5, 30, chars) == 7  # tokens allow 3
    assert tail_start(msgs, 2, 30, chars) == 8  # messages allow 2


def test_a_suspended_step_is_never_cut_into():
    msgs = [*history(5), Msg.assistant([use("pending")])]  # the suspended step at 20
    cut = plan_cut(msgs, keep_messages=1, keep_tokens=None, tokens_of=chars, protect_from=20)
    assert cut is not None and cut.index == 20
    # without the protection the same limits would keep only the step message too:
    # protect earlier than the limits and the cut follows
    cut = plan_cut(msgs, keep_messages=1, keep_tokens=None, tokens_of=chars, protect_from=12)
    assert cut is not None and cut.index == 12


def test_pinned_messages_and_their_tool_partners_are_kept():
    msgs = history(6)
    pinned_call = Msg.assistant([use("c1")], id=msgs[5].id, metadata={PINNED: True})
    msgs[5] = pinned_call  # call 1's assistant message (its result is message 6)
    msgs[8] = Msg.user("remember: the budget is 42", metadata={PINNED: True})
    cut = plan_cut(msgs, keep_messages=8, keep_tokens=None, tokens_of=chars)
    assert cut is not None and cut.index == 16
    assert cut.pinned == (5, 6, 8)
    assert 5 not in cut.summarised and 6 not in cut.summarised and 8 not in cut.summarised
    kept = cut.kept(msgs)
    assert kept[:3] == [msgs[5], msgs[6], msgs[8]]
    dropped = [msgs[i] for i in cut.summarised]
    assert not ids_split(dropped, kept)


def test_an_earlier_summary_is_dropped_not_summarised_nor_kept():
    head = Msg.user("[Summary] ...", metadata={SUMMARY_KEY: {"summarised": 30}, PINNED: True})
    msgs = [head, *history(10)]
    cut = plan_cut(msgs, keep_messages=20, keep_tokens=None, tokens_of=chars)
    assert cut is not None and cut.summaries == (0,) and 0 not in cut.summarised + cut.pinned


def test_nothing_new_to_summarise_is_no_cut():
    head = Msg.user("[Summary]", metadata={SUMMARY_KEY: {}})
    pinned = Msg.user("keep me", metadata={PINNED: True})
    assert (
        plan_cut([head, pinned, Msg.user("hi")], keep_messages=1, keep_tokens=None, tokens_of=chars)
        is None
    )
    assert plan_cut(history(2), keep_messages=20, keep_tokens=None, tokens_of=chars) is None
    assert plan_cut([], keep_messages=20, keep_tokens=None, tokens_of=chars) is None


def test_a_tool_pair_spanning_the_whole_history_leaves_nothing_to_cut():
    msgs = [
        Msg.assistant([use("x")]),
        *[Msg.user(str(i)) for i in range(30)],
        Msg("tool", [result("x")]),
    ]
    assert plan_cut(msgs, keep_messages=5, keep_tokens=None, tokens_of=chars) is None


# ----------------------------------------------------------------------------- properties


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Msg], int | None]:
    """Random valid histories: text turns, steps with one or more tool calls whose results
    come in one or several tool messages (possibly after unrelated text), pinned messages,
    an earlier summary at the head, and maybe a suspended step at the end."""
    msgs: list[Msg] = []
    if draw(st.booleans()):
        msgs.append(Msg.user("[Summary]", metadata={SUMMARY_KEY: {}}))
    counter = 0
    for _ in range(draw(st.integers(0, 25))):
        pin = {PINNED: True} if draw(st.integers(0, 9)) == 0 else {}
        kind = draw(st.sampled_from(["user", "text", "tools"]))
        if kind == "user":
            msgs.append(Msg.user("u" * draw(st.integers(0, 40)), metadata=pin))
        elif kind == "text":
            msgs.append(Msg.assistant("a" * draw(st.integers(0, 40)), metadata=pin))
        else:
            ids = [f"t{counter + k}" for k in range(draw(st.integers(1, 3)))]
            counter += len(ids)
            msgs.append(Msg.assistant([use(i) for i in ids], metadata=pin))
            groups = draw(st.sampled_from(["one", "each"]))
            if draw(st.booleans()):
                msgs.append(Msg.assistant("thinking aloud between call and result"))
            if groups == "one":
                msgs.append(Msg("tool", [result(i) for i in ids]))
            else:
                msgs.extend(Msg("tool", [result(i)]) for i in ids)
    protect = None
    if draw(st.booleans()):
        protect = len(msgs)
        msgs.append(Msg.assistant([use("suspended-1"), use("suspended-2")]))
    return msgs, protect


@settings(max_examples=400, deadline=None)
@given(
    histories(),
    st.one_of(st.none(), st.integers(1, 30)),
    st.one_of(st.none(), st.integers(1, 200)),
)
def test_the_cut_never_splits_a_pair_loses_a_pin_or_enters_a_suspended_step(
    case: tuple[list[Msg], int | None], keep_messages: int | None, keep_tokens: int | None
) -> None:
    msgs, protect = case
    if keep_messages is None and keep_tokens is None:
        keep_messages = 5
    cut = plan_cut(
        msgs,
        keep_messages=keep_messages,
        keep_tokens=keep_tokens,
        tokens_of=chars,
        protect_from=protect,
    )
    if cut is None:
        return
    kept = cut.kept(msgs)
    dropped = [msgs[i] for i in cut.summarised + cut.summaries]
    assert not ids_split(dropped, kept)  # a tool_use and its result are on one side
    assert {id(m) for m in dropped}.isdisjoint(id(m) for m in kept)
    assert len(dropped) + len(kept) == len(msgs)  # every message is accounted for
    assert cut.summarised  # something is summarised
    assert msgs[-1] is kept[-1]  # the last message stays
    # every pinned message stays (earlier summaries are replaced, never kept)
    assert all(m in kept for m in msgs if m.metadata.get(PINNED) and SUMMARY_KEY not in m.metadata)
    assert not any(SUMMARY_KEY in m.metadata for m in kept[: len(cut.pinned)])
    if protect is not None:
        assert cut.index <= protect  # the suspended step and all after it stay
    # the tail is never longer than the limits (and the protection) ask, except to keep a
    # pair together: the cut is the latest safe position at or before that
    start = tail_start(msgs, keep_messages, keep_tokens, chars)
    if protect is not None:
        start = min(start, protect)
    safe = safe_cuts(msgs)
    assert cut.index == max(p for p in range(start + 1) if safe[p])
    # the kept messages are in their original order
    positions = [next(i for i, m in enumerate(msgs) if m is k) for k in kept]
    assert positions == sorted(positions)
