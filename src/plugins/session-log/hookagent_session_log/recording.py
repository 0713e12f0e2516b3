"""One writer's recording: what it committed, what it will commit next, its lease.

Every flush commits, in order, the events waiting (``run/started``, a step's last tool outcome), the
messages appended since the last flush (or one ``context/replaced`` when the history was
rewritten), a ``state/checkpoint`` when the state without its history changed, and the
flush's own events (``model/dispatch``, ``tool/dispatch``, ...). A flush is one commit, so
one round trip; it is durable before the caller goes on (the model is called, the tool
runs) and if it fails the caller never goes on.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import anyio
import attrs
import orjson
from hookagent import AgentState, ToolResultBlock
from hookagent.codec import state_to_dict
from hookagent.messages import new_id
from hookagent.sessionlog import CHECKPOINT, LogEvent, LogWriter, SessionLog

from . import catalogue as c
from .projection import Projection

log = logging.getLogger("hookagent.session_log")


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
    in_flight: int = 0
    """Tool calls of the current step between their dispatch and their outcome."""
    _lock: anyio.Lock = attrs.Factory(anyio.Lock)

    def note(self, kind: str, payload: dict[str, Any] | None = None) -> None:
        """An event to commit with the next flush (nothing is written now)."""
        self.pending.append(c.event(kind, payload, run_id=self.run_id, turn_id=self.turn_id))

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
        self, state: AgentState, extra: Sequence[LogEvent], finish: bool, reason: str
    ) -> None:
        proj, run, turn = self.projection, self.run_id, self.turn_id
        history = state.context
        events = self._waiting(history)
        live: list[Any] = [None] * len(events)  # the Msg behind each message event
        base = proj.base
        replaced = history.unchanged_prefix < self.flushed
        if replaced:
            base = self.seq + len(events) + 1
            events.append(c.replaced_event(list(history), reason, run, turn))
            live.append(None)
        else:
            for m in history[self.flushed :]:
                events.append(c.message_event(m, run, turn))
                live.append(m)
        doc = state_to_dict(state, with_context=False)
        data = orjson.dumps(doc)
        if data != proj.head_bytes or replaced:
            events.extend(_section_events(proj.head_doc, doc, run, turn))
            payload = {"state": doc, "base": base, "history": len(history)}
            events.append(c.event(CHECKPOINT, payload, run_id=run, turn_id=turn))
        events.extend(extra)
        if not events:
            return
        if self.writer.lease_until - time.time() < self.lease / 2:
            self.writer = await self.log.renew(self.writer, self.lease)
        result = await self.log.commit(self.writer, new_id(), self.seq, events, finish=finish)
        self.pending.clear()
        first = result.first_seq
        for i, e in enumerate(events):
            if first + i <= proj.seq:  # a reader of this process brought it in meanwhile
                continue
            live_msg = live[i] if i < len(live) else None
            if live_msg is not None:  # the live message, not a decoded copy of it
                proj._settle(live_msg)
                proj.messages.append(live_msg)
            else:
                proj.apply_one(e, first + i)
        if proj.seq < result.last_seq:
            proj.seq, proj.commit_id = result.last_seq, result.head.commit_id
        self.seq, self.flushed = result.last_seq, len(history)
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
            out.append(c.event(kind, {"section": name}, run_id=run, turn_id=turn))
    return out


def lease_of(options: dict[str, Any]) -> float:
    lease = options.get("lease_seconds", 120.0)
    if type(lease) not in (int, float) or not math.isfinite(lease) or not 1 <= lease <= 3600:
        from hookagent import ConfigurationError

        raise ConfigurationError(
            f"session-log: lease_seconds is a number of seconds in [1, 3600], got {lease!r}"
        )
    return float(lease)
