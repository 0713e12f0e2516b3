"""State = the newest checkpoint + the facts after it: the projection of a session's log.

The history is rebuilt from ``message/appended`` facts since the last ``context/replaced``
(the checkpoint names that position as ``base``); everything else comes from the newest
``state/checkpoint``, which holds the state without its history. No intermediate state is
replayed: a message is appended, a checkpoint replaces the previous one.

The projection also knows what a crash leaves behind: tools dispatched without an outcome
(*uncertain*), outcomes recorded after the last appended message (a crash between a tool's
result and the next save), and the turns completed since ``base``.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import orjson
from hookagent import AgentState, Msg, ToolResultBlock, ToolUseBlock
from hookagent.codec import msg_from_dict, msgs_from_dicts, state_from_dict
from hookagent.sessionlog import CHECKPOINT, LogEvent, Row
from hookagent.state import History, TurnContext
from hookagent.tools import error_result

from . import catalogue as c
from .errors import UnknownRequiredEvent
from .segments import chain_of

NOT_RUN = "not run: the run stopped before this call started"
_SKIPPED = frozenset(c.OPTIONAL - {c.RUN_FINISHED})
"""Known types a rebuild ignores (``run/finished`` is not: it completes a turn)."""
_MESSAGE = c.MESSAGE


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """A cold rebuild decodes thousands of events and messages (no reference cycles among
    them): full collections over the heap meanwhile would double its time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@attrs.define
class Projection:
    """What one session's log says, applied event by event (kept warm between calls)."""

    user_id: str
    session_id: str
    seq: int = 0
    commit_id: str | None = None
    base: int = 0
    messages: list[Msg] = attrs.Factory(list)
    head_doc: dict[str, Any] | None = None
    head_bytes: bytes = b""
    checkpoint_seq: int = 0
    dispatched: dict[str, int] = attrs.Factory(dict)
    """tool_use id -> seq of its dispatch, for dispatches with no outcome yet."""
    results: dict[str, ToolResultBlock] = attrs.Factory(dict)
    """Outcomes recorded by ``tool/result`` that no appended message holds yet."""
    suspended: set[str] = attrs.Factory(set)
    completed_turns: set[str] = attrs.Factory(set)
    turn_seqs: dict[str, int] = attrs.Factory(dict)
    """Completed turn -> the seq that completed it (a segment carries the ones it covers)."""
    segments: list[tuple[int, int, int]] = attrs.Factory(list)
    """The newest checkpoint's chain of history segments (``segments.Link``)."""
    covered: int = 0
    """How many of ``messages`` the chain covers (from the first)."""
    covered_to: int = 0
    """The last seq the chain covers (the base's start when it is empty)."""
    records: dict[int, bytes] = attrs.Factory(dict)
    """Index in ``messages`` -> the record its commit wrote, for messages after the chain
    that this process wrote (the next segment joins them as they are)."""
    uncut: int = -1
    """``covered`` when a cut of the stretch after it failed (over ``SEGMENT_BYTES``, a
    message that will not encode): that stretch is not tried again, nor its records kept,
    until the chain moves or the history is replaced."""

    def set_chain(self, chain: list[tuple[int, int, int]]) -> None:
        """The chain a checkpoint names becomes this projection's."""
        covered = sum(link[2] for link in chain)
        if covered > len(self.messages):
            raise ValueError(f"its segments cover {covered} messages of {len(self.messages)}")
        self.segments = list(chain)
        self.covered = covered
        self.covered_to = chain[-1][1] if chain else (self.base - 1 if self.base > 0 else 0)
        if self.records:
            self.records = {i: r for i, r in self.records.items() if i >= covered}

    def apply(self, events: Iterable[LogEvent]) -> None:
        """Apply events in order; one at or below ``seq`` was applied already (a reader and
        the run's own flush may both bring the same commit in) and is skipped."""
        for e in events:
            if e.seq <= self.seq:
                continue
            self.apply_one(e, e.seq)
            self.seq = e.seq

    def apply_one(self, e: LogEvent, seq: int) -> None:
        """Apply ``e``, committed at ``seq`` (the recorder passes its own events' seqs)."""
        self._apply(e.type, e.payload, seq, e.required, e.turn_id)

    def apply_rows(self, rows: Iterable[Row]) -> None:
        """``apply`` for a backend's raw rows (``read_rows_after``): no envelope objects.

        A cold load's bulk is messages and events a rebuild ignores: the messages are
        structured first, all at once (``codec.msgs_from_dicts``: the bulk decoder a LEGACY
        cold load uses), then appended in order (settling open tool calls as ``_apply``
        does); an ignored type is skipped here, everything else goes through ``_apply``.
        If any message does not decode, the rows are applied one by one instead, so the
        error is ``_apply``'s, naming the event."""
        rows = rows if type(rows) is list else list(rows)
        at = start = self.seq
        docs = [r[4].get("m") for r in rows if r[2] == _MESSAGE and r[0] > start]
        try:
            msgs = msgs_from_dicts(docs) if docs else []
        except Exception:  # row by row, below, says what and where
            msgs = None
        if msgs is None or len(msgs) != len(docs):
            self._apply_each(rows)
            return
        apply, skip, nxt = self._apply, _SKIPPED, iter(msgs).__next__
        try:
            for seq, _, kind, _, payload, required, _, turn in rows:
                if seq <= at:
                    if kind == _MESSAGE and seq > start:
                        nxt()  # decoded but not applied: keep the messages with their rows
                    continue
                if kind == _MESSAGE:
                    msg = nxt()
                    if self.dispatched or self.results or self.suspended:
                        self._settle(msg)
                    self.messages.append(msg)
                elif kind not in skip:
                    apply(kind, payload, seq, required, turn)
                at = seq
        finally:
            self.seq = at

    def _apply_each(self, rows: list[Row]) -> None:
        """``apply_rows`` row by row: a message structured where it is applied."""
        apply, at, skip = self._apply, self.seq, _SKIPPED
        try:
            for seq, _, kind, _, payload, required, _, turn in rows:
                if seq <= at:
                    continue
                if kind == _MESSAGE and not (self.dispatched or self.results or self.suspended):
                    try:
                        doc = payload["m"]
                        msg = doc if type(doc) is Msg else msg_from_dict(doc)
                    except (KeyError, TypeError, ValueError, IndexError):
                        apply(kind, payload, seq, required, turn)  # it explains, with the seq
                    else:
                        self.messages.append(msg)
                elif kind not in skip:
                    apply(kind, payload, seq, required, turn)
                at = seq
        finally:
            self.seq = at

    def _apply(
        self, kind: str, payload: Any, seq: int, required: bool, turn_id: str | None
    ) -> None:
        try:
            if kind == c.MESSAGE:
                self._settle(msg := c.message_in(payload, seq))
                self.messages.append(msg)
            elif kind == c.TOOL_DISPATCH:
                self.dispatched[str(payload["id"])] = seq
            elif kind == c.TOOL_RESULT:
                result = c.result_in(payload, seq)
                self.dispatched.pop(result.id, None)
                self.results[result.id] = result
            elif kind == c.TOOL_SUSPENDED:
                self.dispatched.pop(str(payload["id"]), None)
                self.suspended.add(str(payload["id"]))
            elif kind == CHECKPOINT:
                doc = payload["state"]
                if not isinstance(doc, dict):
                    raise TypeError("a checkpoint's state is an object")
                self.head_doc = doc
                self.head_bytes = orjson.dumps(doc)
                self.checkpoint_seq = seq
                if payload.get("segments") is not None or self.segments:
                    self.set_chain(chain_of(payload))
            elif kind == c.REPLACED:
                self.messages = c.messages_in(payload, seq)
                self.base = seq
                self.dispatched.clear()
                self.results.clear()
                self.suspended.clear()
                self.completed_turns.clear()
                self.turn_seqs.clear()
                self.records.clear()
                self.segments, self.covered, self.covered_to = [], 0, seq - 1
                self.uncut = -1
            elif kind == c.RUN_FINISHED:
                if payload.get("completed") and turn_id:
                    self.completed_turns.add(turn_id)
                    self.turn_seqs[turn_id] = seq
            elif kind == c.RECOVERY or c.known(kind):
                pass
            elif required:
                raise UnknownRequiredEvent(
                    f"user_id={self.user_id!r} session_id={self.session_id!r}: event {seq} "
                    f"has the required type {kind!r}, which this hookagent-session-log does "
                    "not know; refusing to rebuild without it (upgrade the plugin)"
                )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            from hookagent.errors import LogCorrupt

            if isinstance(exc, LogCorrupt):
                raise
            raise LogCorrupt(
                f"user_id={self.user_id!r} session_id={self.session_id!r}: event {seq} "
                f"({kind}) does not hold what its type says: {exc!r}"
            ) from None

    def _settle(self, msg: Msg) -> None:
        for block in msg.content:
            if isinstance(block, ToolResultBlock):
                self.dispatched.pop(block.id, None)
                self.results.pop(block.id, None)
                self.suspended.discard(block.id)

    # ------------------------------------------------------------------ reading it
    def uncertain(self) -> list[ToolUseBlock]:
        """Tool calls dispatched with no outcome, in dispatch order."""
        if not self.dispatched:
            return []
        uses = {u.id: u for m in self.messages for u in m.tool_uses}
        order = sorted(self.dispatched, key=self.dispatched.__getitem__)
        return [uses.get(i) or ToolUseBlock(i, "?", {}) for i in order]

    def state(self) -> AgentState:
        """A fresh state (the caller may change it); its committed prefix is the facts."""
        if self.head_doc is None:
            state = AgentState(session_id=self.session_id, user_id=self.user_id)
            state.context = History(self.messages, committed=True)
        else:
            state = state_from_dict(self.head_doc, context=self.messages)
        if self.results:
            _repair(state, self.results)
        return state


def _repair(state: AgentState, results: dict[str, ToolResultBlock]) -> None:
    """Outcomes recorded after the last saved message: close the open step with them (the
    calls it never started get ``interrupted``), or hand them to the suspended turn."""
    turn = state.turn_context
    if turn.suspended and turn.step_id is not None:
        held = {p.tool_use_id for p in turn.pending}
        done = [r for i, r in results.items() if i in held]
        if done:
            ids = {r.id for r in done}
            turn.pending = [p for p in turn.pending if p.tool_use_id not in ids]
            turn.results = [*turn.results, *done]
        if turn.pending:
            return
        outcomes = {r.id: r for r in turn.results}
        state.turn_context = TurnContext()
    else:
        outcomes = dict(results)
    for index in range(len(state.context) - 1, -1, -1):
        msg = state.context[index]
        if msg.role == "tool":
            return
        if msg.tool_uses:
            if index == len(state.context) - 1:
                state.context.append(
                    Msg(
                        "tool",
                        [
                            outcomes.get(u.id) or error_result(u, NOT_RUN, "interrupted")
                            for u in msg.tool_uses
                        ],
                    )
                )
            return
