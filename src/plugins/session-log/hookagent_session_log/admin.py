"""What an operator does with a session's log: read it, reconcile a crash, export it,
fork it, migrate a LEGACY session into it and back.

Every change here is one commit by a writer of its own, so it is refused while a run holds
the session's lease (``LeaseHeld``) and when the log moved since it was read
(``StalePrefix``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
import attrs
import orjson
from hookagent import AgentState, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.codec import state_from_dict, state_to_dict
from hookagent.errors import SessionLogError
from hookagent.messages import new_id
from hookagent.sessionlog import CHECKPOINT, LogEvent, SessionLog
from hookagent.store.base import AgentStateStore
from hookagent.store.ids import check_id

from . import catalogue as c
from .errors import ReconcileMismatch
from .projection import Projection, gc_paused

OWNER_LEASE = 30.0
PAGE = 1000
OutcomeState = Literal["success", "error", "interrupted", "denied"]


class LogNotEmpty(SessionLogError):
    """A baseline is imported into an empty log only (a fork target, a migrated session)."""


@attrs.frozen
class ToolOutcome:
    """What an operator says happened to an uncertain tool call."""

    state: OutcomeState = "interrupted"
    text: str = ""

    def __attrs_post_init__(self) -> None:
        if self.state not in ("success", "error", "interrupted", "denied"):
            raise ValueError(
                f"a tool outcome is success, error, interrupted or denied, not {self.state!r}"
            )


class Sink(Protocol):
    """Where ``export`` sends events; it must accept a repeated event_id as a no-op."""

    async def write(self, events: Sequence[LogEvent]) -> None: ...


class Watermark(Protocol):
    """The durable position of an export: the last seq a sink holds."""

    async def get(self) -> int: ...

    async def set(self, seq: int) -> None: ...


def event_json(e: LogEvent) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "type": e.type,
        "event_id": e.event_id,
        "occurred_at": e.occurred_at,
        "run_id": e.run_id,
        "turn_id": e.turn_id,
        "required": e.required,
        "schema_version": e.schema_version,
        "payload": dict(e.payload),
    }


class JsonlSink:
    """Events appended to a JSON-lines file, one an event; a repeated event_id is skipped."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._seen: set[str] | None = None

    async def write(self, events: Sequence[LogEvent]) -> None:
        if self._seen is None:
            self._seen = set()
            if self.path.exists():
                for line in self.path.read_bytes().splitlines():
                    if line.strip():
                        self._seen.add(orjson.loads(line)["event_id"])
        fresh = [e for e in events if e.event_id not in self._seen]
        if not fresh:
            return
        with self.path.open("ab") as f:
            for e in fresh:
                f.write(orjson.dumps(event_json(e)) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        self._seen.update(e.event_id for e in fresh)


class FileWatermark:
    """A seq kept in a small file, replaced atomically and fsynced."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    async def get(self) -> int:
        if not self.path.exists():
            return 0
        value = orjson.loads(self.path.read_bytes())
        if type(value) is not int or value < 0:
            raise SessionLogError(f"{self.path}: a watermark is a seq (an int >= 0), got {value!r}")
        return value

    async def set(self, seq: int) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("wb") as f:
            f.write(orjson.dumps(seq))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


class SessionLogAdmin:
    """Operator access to session logs (``hookagent log ...`` uses it)."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log

    async def project(self, user_id: str, session_id: str) -> Projection:
        """The session's projection, rebuilt from the newest checkpoint."""
        head = await self.log.head(user_id, session_id)
        proj = Projection(user_id, session_id)
        start = 0
        if head.checkpoint_seq:
            cp = await self.log.read_after(user_id, session_id, head.checkpoint_seq - 1, 1)
            base = cp[0].payload.get("base", 0) if cp else 0
            start = base - 1 if type(base) is int and base > 0 else 0
        with gc_paused():
            proj.apply(await self.log.read_after(user_id, session_id, start))
        return proj

    async def events(
        self,
        user_id: str,
        session_id: str,
        *,
        after: int = 0,
        limit: int | None = None,
        run_id: str | None = None,
        turn_id: str | None = None,
        types: Iterable[str] = (),
    ) -> list[LogEvent]:
        """The session's events after ``after``, filtered (a type ``tool/`` matches a prefix)."""
        wanted = tuple(types)
        out: list[LogEvent] = []
        seq = after
        while True:
            page = await self.log.read_after(user_id, session_id, seq, PAGE)
            for e in page:
                if run_id is not None and e.run_id != run_id:
                    continue
                if turn_id is not None and e.turn_id != turn_id:
                    continue
                if wanted and not any(
                    e.type == t or (t.endswith("/") and e.type.startswith(t)) for t in wanted
                ):
                    continue
                out.append(e)
                if limit is not None and len(out) >= limit:
                    return out
            if len(page) < PAGE:
                return out
            seq = page[-1].seq

    async def uncertain(self, user_id: str, session_id: str) -> list[ToolUseBlock]:
        return (await self.project(user_id, session_id)).uncertain()

    async def reconcile(
        self,
        user_id: str,
        session_id: str,
        outcomes: Mapping[str, ToolOutcome | str],
        reason: str,
    ) -> int:
        """Say what happened to each uncertain tool call (exactly those); returns the new seq."""
        if not isinstance(reason, str) or not reason.strip():
            raise ReconcileMismatch("reconcile needs a reason (who decided, on what evidence)")
        proj = await self.project(user_id, session_id)
        uncertain = {u.id: u for u in proj.uncertain()}
        missing, extra = set(uncertain) - set(outcomes), set(outcomes) - set(uncertain)
        if missing or extra or not uncertain:
            raise ReconcileMismatch(
                f"reconcile must name exactly the uncertain calls {sorted(uncertain)}; "
                f"missing {sorted(missing)}, not uncertain {sorted(extra)}"
            )
        decided = {
            k: ToolOutcome(v) if isinstance(v, str) else v  # type: ignore[arg-type]  # checked
            for k, v in outcomes.items()
        }
        results = [
            ToolResultBlock(
                i,
                uncertain[i].name,
                (TextBlock(o.text or f"reconciled: {o.state} ({reason})"),),
                o.state,
            )
            for i, o in decided.items()
        ]
        summary = {i: o.state for i, o in decided.items()}
        events = [c.event(c.RECOVERY, {"reason": reason, "outcomes": summary})]
        events += [c.result_event(r, None, None) for r in results]
        return await self._commit(user_id, session_id, proj.seq, events, "reconcile")

    async def import_baseline(
        self, user_id: str, session_id: str, state: AgentState, *, source: str = ""
    ) -> int:
        """Start an empty log from ``state`` (its history becomes one ``context/replaced``)."""
        check_id(user_id, "user_id", allow_empty=True)
        check_id(session_id, "session_id")
        head = await self.log.head(user_id, session_id)
        if head.seq:
            raise LogNotEmpty(
                f"user_id={user_id!r} session_id={session_id!r}: the log already holds {head.seq} events"
            )
        doc = {
            **state_to_dict(state, with_context=False),
            "session_id": session_id,
            "user_id": user_id,
        }
        messages = list(state.context)
        state_from_dict(doc, context=messages)  # the baseline must load as a state
        events = [
            c.event(c.IMPORTED, {"source": source, "messages": len(messages)}),
            c.replaced_event(messages, "import", None, None),
            c.event(CHECKPOINT, {"state": doc, "base": 2, "history": len(messages)}),
        ]
        return await self._commit(user_id, session_id, 0, events, "import")

    async def fork(self, user_id: str, session_id: str, new_session_id: str) -> int:
        """A new session whose log starts from this one's current state."""
        state = (await self.project(user_id, session_id)).state()
        return await self.import_baseline(
            user_id, new_session_id, state, source=f"fork of {session_id}"
        )

    async def import_from_store(self, store: AgentStateStore, user_id: str, session_id: str) -> int:
        """Migrate a LEGACY session (a state store's slot) into its empty log."""
        got = await store.get_versioned(user_id, session_id)
        if got.state is None:
            raise SessionLogError(
                f"user_id={user_id!r} session_id={session_id!r}: the store has no such session"
            )
        return await self.import_baseline(
            user_id, session_id, got.state, source=f"{type(store).__name__} v{got.version}"
        )

    async def export_state(self, user_id: str, session_id: str) -> AgentState:
        """The session's state as the log says, to save into a state store (back to LEGACY)."""
        return (await self.project(user_id, session_id)).state()

    async def export(self, user_id: str, session_id: str, sink: Sink, watermark: Watermark) -> int:
        """Send the events after the watermark to ``sink``, moving the watermark after each
        page; a crash in between resends a page (the sink skips repeated event_ids)."""
        seq = await watermark.get()
        sent = 0
        while True:
            page = await self.log.read_after(user_id, session_id, seq, PAGE)
            if not page:
                return sent
            await sink.write(page)
            seq = page[-1].seq
            await watermark.set(seq)
            sent += len(page)

    async def append(self, user_id: str, session_id: str, events: Sequence[LogEvent]) -> int:
        """Application events (namespaced types, ``acme/review_note``), one commit."""
        for e in events:
            if e.type.split("/", 1)[0] in {t.split("/", 1)[0] for t in c.REQUIRED | c.OPTIONAL}:
                raise SessionLogError(
                    f"event type {e.type!r}: use a namespace of your own (acme/...)"
                )
        head = await self.log.head(user_id, session_id)
        return await self._commit(user_id, session_id, head.seq, list(events), "append")

    async def _commit(
        self, user_id: str, session_id: str, expected: int, events: list[LogEvent], what: str
    ) -> int:
        writer = await self.log.acquire(user_id, session_id, f"{what}-{new_id()}", OWNER_LEASE)
        try:
            result = await self.log.commit(writer, new_id(), expected, events, finish=True)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.log.release(writer)
            raise
        return result.last_seq
