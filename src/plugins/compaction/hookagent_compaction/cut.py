"""Where to cut a history: a pure function from the messages and the keep limits to a plan.

The history is split into a *prefix* (summarised) and a *tail* (kept verbatim). The tail
holds the last ``keep_messages`` messages and/or at most ``keep_tokens`` tokens, never less
than the last message. Then the cut moves earlier (keeping more, never less) until:

* no tool id is on both sides: a tool_use and its tool_result are summarised together or
  kept together;
* it is at or before ``protect_from`` (the assistant message of a suspended step, whose
  results wait in ``turn_context``): a suspended interaction is never cut into.

Inside the prefix, pinned messages (``metadata["pinned"] is True``) are kept verbatim, with
every message they share a tool id with (so a pinned tool call keeps its result), and
earlier summary messages are dropped (their text is chained through ``state.summary``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
from hookagent.messages import Msg, ToolResultBlock, ToolUseBlock

PINNED = "pinned"
"""``Msg(..., metadata={"pinned": True})``: never summarised away."""
SUMMARY_KEY = "compaction_summary"
"""Metadata key of the summary message this plugin puts at the head of a compacted history."""


def is_pinned(msg: Msg) -> bool:
    return msg.metadata.get(PINNED) is True and not is_summary(msg)


def is_summary(msg: Msg) -> bool:
    return SUMMARY_KEY in msg.metadata


def tool_ids(msg: Msg) -> tuple[str, ...]:
    """The tool ids a message refers to (its tool_use and tool_result blocks)."""
    return tuple(b.id for b in msg.content if isinstance(b, ToolUseBlock | ToolResultBlock))


@attrs.frozen
class Cut:
    """A plan: ``messages[:index]`` is the prefix; of it, ``summarised`` are summarised,
    ``pinned`` kept verbatim (in order) and ``summaries`` (earlier summary messages) dropped."""

    index: int
    summarised: tuple[int, ...]
    pinned: tuple[int, ...]
    summaries: tuple[int, ...]

    def kept(self, messages: Sequence[Msg]) -> list[Msg]:
        """The messages that stay, without a new summary: pinned ones, then the tail."""
        return [messages[i] for i in self.pinned] + list(messages[self.index :])


def tail_start(
    messages: Sequence[Msg],
    keep_messages: int | None,
    keep_tokens: int | None,
    tokens_of: Callable[[Msg], int],
) -> int:
    """Where the tail starts under the keep limits alone (the last message always stays)."""
    n = len(messages)
    if n == 0:
        return 0
    start = n - 1
    floor = 0 if keep_messages is None else max(n - keep_messages, 0)
    budget = keep_tokens
    if budget is not None:
        budget -= tokens_of(messages[-1])
    while start > floor:
        if budget is not None:
            cost = tokens_of(messages[start - 1])
            if cost > budget:
                break
            budget -= cost
        start -= 1
    return start


def safe_cuts(messages: Sequence[Msg]) -> list[bool]:
    """``safe[p]``: cutting before message ``p`` separates no tool_use from its result."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, msg in enumerate(messages):
        for tid in tool_ids(msg):
            first.setdefault(tid, i)
            last[tid] = i
    cover = [0] * (len(messages) + 2)
    for tid, lo in first.items():
        hi = last[tid]
        if hi > lo:  # a cut at p in (lo, hi] splits this id
            cover[lo + 1] += 1
            cover[hi + 1] -= 1
    safe, depth = [], 0
    for p in range(len(messages) + 1):
        depth += cover[p]
        safe.append(depth == 0)
    return safe


def _pinned_groups(prefix: Sequence[Msg]) -> set[int]:
    """Indices of pinned prefix messages and every message linked to them by a tool id."""
    by_id: dict[str, list[int]] = {}
    for i, msg in enumerate(prefix):
        for tid in tool_ids(msg):
            by_id.setdefault(tid, []).append(i)
    keep: set[int] = set()
    stack = [i for i, msg in enumerate(prefix) if is_pinned(msg)]
    while stack:
        i = stack.pop()
        if i in keep or is_summary(prefix[i]):
            continue
        keep.add(i)
        for tid in tool_ids(prefix[i]):
            stack.extend(by_id[tid])
    return keep


def plan_cut(
    messages: Sequence[Msg],
    *,
    keep_messages: int | None,
    keep_tokens: int | None,
    tokens_of: Callable[[Msg], int],
    protect_from: int | None = None,
) -> Cut | None:
    """The cut for ``messages``, or None when nothing new would be summarised."""
    start = tail_start(messages, keep_messages, keep_tokens, tokens_of)
    if protect_from is not None:
        start = min(start, max(protect_from, 0))
    safe = safe_cuts(messages)
    while not safe[start]:
        start -= 1
    prefix = messages[:start]
    pinned = _pinned_groups(prefix)
    summaries = tuple(i for i, m in enumerate(prefix) if is_summary(m))
    summarised = tuple(i for i in range(start) if i not in pinned and not is_summary(prefix[i]))
    if not summarised:
        return None
    return Cut(start, summarised, tuple(sorted(pinned)), summaries)
