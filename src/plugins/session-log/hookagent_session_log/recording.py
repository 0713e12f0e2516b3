"""One writer's recording: what it committed, what it will commit next, its lease.

Every flush commits, in order, the events waiting (``run/started``, a step's last tool outcome), the
messages appended since the last flush (or one ``context/replaced`` when the history was
rewritten), a ``state/checkpoint`` when the state without its history changed, and the
flush's own events (``model/dispatch``, ``tool/dispatch``, ...). A flush is one commit, so
one round trip; it is durable before the caller goes on (the model is called, the tool
runs) and if it fails the caller never goes on.

What a flush costs besides its I/O is kept small on purpose (a W1 call makes four): the
recorder builds its events itself (``fact``: catalogue types, ids drawn in bulk, its own
clock) and encodes each commit once, unchecked, as a ``BuiltBatch``; whether a checkpoint
is due is decided on a fingerprint of the state without its history (``fingerprint``), and
the state is encoded only when that changed.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import anyio
import attrs
import orjson
from hookagent import AgentState, ToolResultBlock
from hookagent.codec import state_to_dict
from hookagent.errors import InvalidState, StateTooLarge
from hookagent.sessionlog import CHECKPOINT, LOG_SCHEMA_VERSION, LogEvent, LogWriter, SessionLog
from hookagent.sessionlog.batch import built_batch

from . import catalogue as c
from .projection import Projection
from .segments import SEGMENT_MESSAGES, cut, due, keep_record, uncuttable

log = logging.getLogger("hookagent.session_log")


_SETTERS = tuple(LogEvent.__dict__[f.name].__set__ for f in attrs.fields(LogEvent))
(_TYPE, _PAYLOAD, _REQUIRED, _RUN, _TURN, _ID, _AT, _SEQ, _VERSION) = _SETTERS
_NEW = object.__new__
_IDS_AT_ONCE = 256


class _Ids:
    """Event ids in ``new_id``'s form (a version-4 UUID's hex), drawn from one
    ``os.urandom`` read per 256 ids instead of one each; a forked child draws afresh."""

    def __init__(self) -> None:
        self._left: list[str] = []
        os.register_at_fork(after_in_child=self._left.clear)

    def __call__(self) -> str:
        left = self._left
        if not left:
            raw = bytearray(os.urandom(16 * _IDS_AT_ONCE))
            raw[6::16] = bytes((b & 0x0F) | 0x40 for b in raw[6::16])  # version 4
            raw[8::16] = bytes((b & 0x3F) | 0x80 for b in raw[8::16])  # RFC 4122 variant
            left.extend(raw[i : i + 16].hex() for i in range(len(raw) - 16, -1, -16))
        return left.pop()


event_id = _Ids()


def fact(
    kind: str, payload: dict[str, Any] | None, run_id: str | None, turn_id: str | None
) -> LogEvent:
    """A ``LogEvent`` the recorder writes: ``kind`` is the catalogue's, the ids are the
    run's (checked when its ``Recording`` is made), the payload a dict it built. Made
    without ``LogEvent.__init__`` (its converter and frozen setters are a third of the
    cost of a flush's envelopes); the envelope is checked here, once, not again by
    ``encode_batch``."""
    e = _NEW(LogEvent)
    _TYPE(e, kind)
    _PAYLOAD(e, payload if payload is not None else {})
    _REQUIRED(e, kind in c.REQUIRED)
    _RUN(e, run_id)
    _TURN(e, turn_id)
    _ID(e, event_id())
    _AT(e, time.time())
    _SEQ(e, 0)
    _VERSION(e, LOG_SCHEMA_VERSION)
    return e


def _fields(value: Any) -> Any:
    """orjson's ``default`` for ``fingerprint``: an attrs instance as its class and fields."""
    cls = type(value)
    names = _NAMES.get(cls)
    if names is None:
        if not attrs.has(cls):
            raise TypeError(f"{cls.__name__} is not JSON data")
        names = _NAMES[cls] = tuple(f.name for f in attrs.fields(cls))
    return (cls.__qualname__, *[getattr(value, n) for n in names])


_NAMES: dict[type, tuple[str, ...]] = {}


def fingerprint(state: AgentState) -> bytes | None:
    """Bytes that are equal only for states whose checkpoint (``state_to_dict`` without the
    history, encoded) is equal: every section but the history, typed ones as their class
    and fields. About a fifth of the encoding it stands for; None when it cannot be made
    (the full encoding then decides, and reports what is wrong)."""
    try:
        return orjson.dumps(
            (
                state.summary,
                state.tool_context,
                state.turn_context,
                state.shutdown_interrupted,
                state.schema_version,
                state.extensions,
            ),
            default=_fields,
        )
    except TypeError:
        return None


@attrs.define(eq=False)
class Recording:
    """The writer of one run (or one admin change) on one session."""

    log: SessionLog
    writer: LogWriter
    projection: Projection
    lease: float
    run_id: str | None = None
    turn_id: str | None = None
    state: AgentState | None = None
    """The run's live state (the one the kernel loaded); None for an admin change."""
    loaded_seq: int = 0
    seq: int = 0
    flushed: int = 0
    """How many of the state's messages are facts in the log."""
    outcome: str | None = None
    pending: list[LogEvent] = attrs.Factory(list)
    finished: bool = False
    durability: str = "dispatch"
    segment_messages: int = SEGMENT_MESSAGES
    """K: a history segment is cut once this many messages follow the last one."""
    in_flight: int = 0
    """Tool calls of the current step between their dispatch and their outcome."""
    seen: tuple[bytes, bytes] | None = None
    """(the projection's checkpoint bytes, the fingerprint of a state that encodes to them):
    while both hold, no checkpoint is due and the state is not encoded."""
    encodings: int = 0
    """How many times the state was encoded to decide a checkpoint (the tests count them)."""
    _lock: anyio.Lock = attrs.Factory(lambda: anyio.Lock(fast_acquire=True))
    """A flush, a concurrent tool's flush and the heartbeat's renewal take turns; a free
    lock is taken without yielding to the event loop (a W1 call's four flushes would
    otherwise make four extra trips through the loop)."""

    def __attrs_post_init__(self) -> None:
        for name in ("run_id", "turn_id"):  # the envelopes' ids, checked once for every fact
            value = getattr(self, name)
            if value is not None and type(value) is not str:
                raise InvalidState(f"session-log: a {name} is a str or None, got {value!r}")

    def fact(self, kind: str, payload: dict[str, Any] | None = None) -> LogEvent:
        """An event of this run (``fact``)."""
        return fact(kind, payload, self.run_id, self.turn_id)

    def note(self, kind: str, payload: dict[str, Any] | None = None) -> None:
        """An event to commit with the next flush (nothing is written now)."""
        self.pending.append(fact(kind, payload, self.run_id, self.turn_id))

    async def flush(
        self,
        state: AgentState,
        extra: Sequence[LogEvent] = (),
        *,
        finish: bool = False,
        reason: str = "rewritten",
    ) -> None:
        """Commit what changed since the last flush; durable when this returns."""
        async with self._lock:
            await self._flush(state, extra, finish, reason)

    async def _flush(
        self,
        state: AgentState,
        extra: Sequence[LogEvent],
        finish: bool,
        reason: str,
        segment: bool = True,
    ) -> None:
        proj, run, turn = self.projection, self.run_id, self.turn_id
        history = state.context
        events = self._waiting(history)
        live: list[Any] = [None] * len(events)  # the Msg behind each message event
        base = proj.base
        replaced = history.unchanged_prefix < self.flushed
        seg = None
        if replaced:
            base = self.seq + len(events) + 1
            events.append(fact(c.REPLACED, {"ms": list(history), "reason": reason}, run, turn))
            live.append(None)
        else:
            for m in history[self.flushed :]:
                events.append(fact(c.MESSAGE, {"m": m}, run, turn))
                live.append(m)
            if segment and proj.seq == self.seq and due(proj, self.segment_messages):
                seg = cut(proj, run, turn, fact)  # covers what is committed: seqs <= self.seq
        chain = [] if replaced else list(proj.segments)
        seen, mark = self.seen, fingerprint(state)
        checkpoint: tuple[int, dict[str, Any], bytes, list[Any]] | None = None
        if (
            replaced
            or seg is not None
            or seen is None
            or mark is None
            or seen != (proj.head_bytes, mark)
        ):
            self.encodings += 1
            doc = state_to_dict(state, with_context=False)
            data = orjson.dumps(doc)
            if data != proj.head_bytes or replaced or seg is not None:
                events.extend(_section_events(proj.head_doc, doc, run, turn))
                if seg is not None:  # named by the checkpoint that follows it
                    count = len(proj.messages) - proj.covered
                    chain.append((self.seq + len(events) + 1, proj.seq, count))
                    events.append(seg)
                payload: dict[str, Any] = {"state": doc, "base": base, "history": len(history)}
                if chain:
                    payload["segments"] = [list(link) for link in chain]
                checkpoint = (len(events), doc, data, chain)
                events.append(fact(CHECKPOINT, payload, run, turn))
            seen = None if mark is None else (data, mark)
        events.extend(extra)
        if not events:  # (so the state encodes to the head's checkpoint: no event for it)
            self.seen = seen
            return
        records: list[bytes | None] = []
        try:  # every event is the recorder's own (``fact``)
            batch = built_batch(events, records)
        except StateTooLarge:
            if seg is None:
                raise
            uncuttable(proj)  # not tried again for this stretch
            return await self._flush(state, extra, finish, reason, segment=False)
        if self.writer.lease_until - time.time() < self.lease / 2:
            self.writer = await self.log.renew(self.writer, self.lease)
        result = await self.log.commit(self.writer, event_id(), self.seq, batch, finish=finish)
        self.pending.clear()
        first = result.first_seq
        for i, e in enumerate(events):
            if first + i <= proj.seq:  # a reader of this process brought it in meanwhile
                continue
            live_msg = live[i] if i < len(live) else None
            if live_msg is not None:  # the live message, not a decoded copy of it
                proj._settle(live_msg)
                record = records[i]
                if record is not None and keep_record(proj, self.segment_messages):
                    proj.records[len(proj.messages)] = record
                proj.messages.append(live_msg)
            elif checkpoint is not None and i == checkpoint[0]:  # the bytes committed, as
                proj.head_doc, proj.head_bytes = checkpoint[1], checkpoint[2]  # encoded then
                proj.checkpoint_seq = first + i
                if checkpoint[3] or proj.segments:
                    proj.set_chain(checkpoint[3])
            else:
                proj.apply_one(e, first + i)
        if proj.seq < result.last_seq:
            proj.seq, proj.commit_id = result.last_seq, result.head.commit_id
        self.seq, self.flushed = result.last_seq, len(history)
        self.seen = None if seen is None or proj.head_bytes != seen[0] else seen
        history.mark_committed()
        if finish:
            self.finished = True

    def _waiting(self, history: Any) -> list[LogEvent]:
        """The events waiting, less a ``tool/result`` whose result a message of this very
        commit holds (the step's tool message): the fact is written once, not twice."""
        if not any(e.type == c.TOOL_RESULT for e in self.pending):
            return list(self.pending)
        held = {
            b.id
            for m in history[self.flushed :]
            if m.role == "tool"
            for b in m.content
            if isinstance(b, ToolResultBlock)
        }
        return [e for e in self.pending if e.type != c.TOOL_RESULT or e.payload["id"] not in held]

    async def renew(self) -> None:
        """Extend the lease now (the heartbeat thread schedules this on the run's loop)."""
        async with self._lock:
            if not self.finished:
                self.writer = await self.log.renew(self.writer, self.lease)


def _section_events(
    old: dict[str, Any] | None, new: dict[str, Any], run: str | None, turn: str | None
) -> list[LogEvent]:
    """``task/changed``, ``permission/changed``, ``plan/changed`` for the sections that did."""
    if old is None:  # the log's first checkpoint: what it holds is the start, not a change
        return []
    out = []
    before = old
    for name, kind in c.SECTION_EVENTS.items():
        if before.get(name) != new.get(name):
            out.append(fact(kind, {"section": name}, run, turn))
    return out


def lease_of(options: dict[str, Any]) -> float:
    lease = options.get("lease_seconds", 120.0)
    if type(lease) not in (int, float) or not math.isfinite(lease) or not 1 <= lease <= 3600:
        from hookagent import ConfigurationError

        raise ConfigurationError(
            f"session-log: lease_seconds is a number of seconds in [1, 3600], got {lease!r}"
        )
    return float(lease)


def segment_messages_of(options: dict[str, Any]) -> int:
    """The ``segment_messages`` option (K, default 256): an int in [2, 100000]."""
    k = options.get("segment_messages", SEGMENT_MESSAGES)
    if type(k) is not int or not 2 <= k <= 100_000:
        from hookagent import ConfigurationError

        raise ConfigurationError(
            f"session-log: segment_messages is a number of messages in [2, 100000], got {k!r}"
        )
    return k
