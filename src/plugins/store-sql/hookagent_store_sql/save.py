"""One save, planned outside the transaction and run inside it.

Everything that can be validated is encoded before the transaction starts (the head and the
messages past the unchanged prefix); the rest of the history is encoded only if the save
turns out to be a rewrite, still before the first row is written, so a bad state writes
nothing. The write itself is proportional to the change. The messages go in as chunks (a
row per save, ``<p>chunks``); a rewrite whose start falls inside a stored chunk rewrites it
from that chunk's first message, found (and those messages encoded) after the compare-and-set
locked the slot row: an error there rolls the transaction back, nothing is written.

Fail closed: the compare-and-set ``UPDATE`` matches only a row whose version, generation,
count and head are the ones this instance checked (a load) or wrote; any other row is read
in the transaction and checked as a load would check it (``verify``) before anything is
written: corrupt is ``CorruptState``, a newer schema ``UnsupportedSchemaVersion``, and the
transaction is rolled back with the evidence intact. ``UNCONDITIONAL`` included.
"""

from __future__ import annotations

import secrets
from operator import itemgetter
from typing import Any

from hookagent.codec import encode_head, encode_msg
from hookagent.errors import CorruptState, VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import UNCONDITIONAL, ExpectedVersion, Fence
from hookagent.store.ids import slot_name
from sqlalchemy.engine import Connection

from . import verify
from .cache import CachedSlot
from .errors import is_duplicate
from .migrations import utcnow
from .queries import Queries, RetryTransaction
from .schema import slot_hash

Chunk = tuple[int, int, str]
"""A stored chunk: (end_seq, n, body): messages ``end_seq - n .. end_seq - 1``, their records
joined by a newline (``encode_msg`` never writes a raw one: compact JSON escapes it)."""

CHUNK_BYTES = 1024 * 1024
"""A save's records go in chunks of at most this many bytes (one record may be alone and up
to the message limit): MySQL's MEDIUMTEXT holds 16 MiB, and a rewrite may be the whole history."""


def encode_body(msg: Msg) -> str:
    """Encode (and so validate) one message: its record as text."""
    return encode_msg(msg).decode("utf-8")


def chunks_of(start: int, bodies: list[str]) -> list[Chunk]:
    """Messages ``start ..`` (their records) as chunks, in order, each under ``CHUNK_BYTES``
    unless a single record is larger."""
    out: list[Chunk] = []
    first, size = 0, 0
    for i, body in enumerate(bodies):
        if i > first and size + len(body) + 1 > CHUNK_BYTES:
            out.append((start + i, i - first, "\n".join(bodies[first:i])))
            first, size = i, 0
        size += len(body) + 1
    if first < len(bodies):
        out.append((start + len(bodies), len(bodies) - first, "\n".join(bodies[first:])))
    return out


def rows_past_count(slot: verify.Slot) -> CorruptState:
    """A new row collided with a stored one: the slot holds rows past its message_count."""
    return CorruptState(
        f"{slot_name(*slot)} holds message rows past its message_count (the count "
        "disagrees with the rows): nothing was written"
    )


def new_generation() -> int:
    """A recreated slot starts at a random generation, so no reader's cache matches it."""
    return secrets.randbits(62)


class SavePlan:
    def __init__(
        self,
        user_id: str,
        session_id: str,
        key: str,
        state: AgentState,
        expected: ExpectedVersion,
        fence: Fence | None,
        cached: CachedSlot | None,
    ) -> None:
        self.u, self.s, self.k = user_id, session_id, key
        self.h = slot_hash(session_id, key)
        self.expected, self.fence = expected, fence
        self.cached = cached  # read on the event loop: the plan may run in another thread
        self.stale = False  # the direct path's compare-and-set on ``cached`` matched nothing
        self.head = encode_head(state).decode("utf-8")
        # a snapshot sharing the history's lists (O(1)): later changes to the state's
        # history do not show in it, and nothing copies the whole history per save
        self.history = state.context.view()
        self.count = len(self.history)
        self.base = state.context.unchanged_prefix
        self.appended: int | None = None
        """Where the applied write appended to exactly what ``cached`` holds (None: it did not)."""
        self._rows: dict[int, str] = {}
        self._encode(self.base)  # the new messages: validated before anything is written

    def _encode(self, start: int) -> list[str]:
        """The records of messages ``start ..`` (each encoded once per plan)."""
        rows, msgs = self._rows, self.history
        out = []
        for seq in range(start, self.count):
            row = rows.get(seq)
            if row is None:
                row = rows[seq] = encode_body(msgs[seq])
            out.append(row)
        return out

    def _params(self) -> dict[str, str]:
        return {"u": self.u, "h": self.h}

    @property
    def slot(self) -> verify.Slot:
        return (self.u, self.s, self.k)

    def _insert(self, conn: Connection, q: Queries, start: int, rows: list[str]) -> None:
        u, h = self.u, self.h
        values = [
            {"user_id": u, "slot_hash": h, "end_seq": end, "n": n, "body": body}
            for end, n, body in chunks_of(start, rows)
        ]
        try:
            conn.execute(q.insert_chunks, values)
        except Exception as exc:
            if is_duplicate(exc):
                raise rows_past_count(self.slot) from None
            raise

    def _inspect(self, conn: Connection, q: Queries) -> tuple[int, int, int, str] | None:
        """Read the slot in the transaction and check it as a load would (only the rows this
        instance does not hold are read): (version, generation, count, head), None if absent.
        Raises ``CorruptState`` / ``UnsupportedSchemaVersion``."""
        cached = self.cached
        start = cached.length if cached is not None else 0
        for _ in range(2):
            rows = conn.execute(q.load, {**self._params(), "start": start}).all()
            if rows and rows[0][0] != -1:
                rows = sorted(rows, key=itemgetter(0))
            if not rows or rows[0][0] != -1:
                return None
            _, version, generation, count, head = rows[0]
            verify.check_counters(version, generation, count, self.slot)
            if cached is not None and (generation != cached.generation or start > count):
                cached, start = None, 0  # rewritten or recreated since: check it all
                continue
            held: list[Msg] = cached.log[:start] if cached is not None else []
            messages = [*held, *verify.decode_tail(rows, start, count, self.slot)]
            verify.check_writable(head, messages, self.slot)
            return version, generation, count, head
        raise RetryTransaction  # pragma: no cover - the second read starts from 0

    def log_after(self) -> list[Msg]:
        """The cache's message list once the save applied: the cached list extended by what
        the call added when the save was an append to exactly what is cached (O(new), and
        every history loaded from it keeps reading its own length), else a new list."""
        cached, start = self.cached, self.appended
        if start is not None and cached is not None:
            return cached.extended(start, self.history[start:])
        return list(self.history)

    def is_append(self) -> bool:
        """A pure append at the version this instance holds: one statement can do it."""
        cached = self.cached
        return (
            self.fence is None
            and self.expected is not UNCONDITIONAL
            and self.expected != 0
            and cached is not None
            and cached.version == self.expected
            and self.base == cached.length
        )

    def is_create(self) -> bool:
        """A create (expected version 0) without a fence: one statement can do it."""
        return self.fence is None and self.expected == 0

    def new_chunks(self) -> list[Chunk]:
        """The chunks an append writes (after ``is_append``) or a create writes (all)."""
        start = self.base if self.expected != 0 else 0
        return chunks_of(start, self._encode(start))

    def run(self, conn: Connection, q: Queries) -> tuple[int, int]:
        """Return (new version, new generation) or raise VersionConflict/Fenced."""
        now = utcnow()
        self.appended = None  # a rerun transaction decides again
        if self.fence is not None:
            q.check_fence(conn, self.u, self.s, self.fence.epoch, self.fence.owner, now)
        if self.expected == 0:
            return self._create(conn, q, now)
        cached = self.cached
        if (
            cached is not None
            and not self.stale
            and self.expected is not UNCONDITIONAL
            and cached.version == self.expected
        ):
            # fast path: what we hold (checked or written by us) describes the stored row,
            # head included; one UPDATE proves it
            done = self._update(
                conn, q, now, self.expected, cached.generation, cached.length, cached.head
            )
            if done is not None:
                return done
        for _ in range(5):
            # read and check the row, then an UPDATE that proves it did not change
            seen = self._inspect(conn, q)
            if seen is None:
                if self.expected is UNCONDITIONAL:
                    return self._create(conn, q, now)
                raise VersionConflict(self.u, self.s, self.k, self.expected, 0)
            version, generation, count, head = seen
            if self.expected is not UNCONDITIONAL and version != self.expected:
                raise VersionConflict(self.u, self.s, self.k, self.expected, version)
            done = self._update(conn, q, now, version, generation, count, head)
            if done is not None:
                return done
        raise RetryTransaction  # the row kept changing between our read and our update

    def _create(self, conn: Connection, q: Queries, now: Any) -> tuple[int, int]:
        rows = self._encode(0)
        generation = new_generation()
        values = {
            "user_id": self.u,
            "slot_hash": self.h,
            "session_id": self.s,
            "state_key": self.k,
            "version": 1,
            "generation": generation,
            "message_count": self.count,
            "head": self.head,
            "created_at": now,
            "updated_at": now,
        }
        if not q.create_slot(conn, values):
            if self.expected is UNCONDITIONAL:
                raise RetryTransaction
            seen = self._inspect(conn, q)  # a corrupt slot says so, not "version conflict"
            raise VersionConflict(self.u, self.s, self.k, 0, seen[0] if seen else None)
        # rows left behind under this slot's address must not leak into the new slot
        conn.execute(q.delete_from, {**self._params(), "start": 0})
        conn.execute(q.delete_chunks_from, {**self._params(), "start": 0})
        if rows:
            self._insert(conn, q, 0, rows)
        return 1, generation

    def _update(
        self,
        conn: Connection,
        q: Queries,
        now: Any,
        version: int,
        generation: int,
        stored: int,
        head: str,
    ) -> tuple[int, int] | None:
        appendable = self.expected is not UNCONDITIONAL and 0 < self.base <= stored
        start = self.base if appendable else 0
        new_generation = generation if start == stored else generation + 1
        rows = self._encode(start)  # may raise InvalidState: nothing written yet
        params = {
            **self._params(),
            "expected": version,
            "gen": generation,
            "count": stored,
            "old_head": verify.head_token(q.backend, head),
            "new_version": version + 1,
            "new_generation": new_generation,
            "new_count": self.count,
            "new_head": self.head,
            "now": now,
        }
        if conn.execute(q.cas_slot, params).rowcount != 1:
            return None
        cached = self.cached
        if (
            cached is not None
            and start == stored
            and (version, generation, stored) == (cached.version, cached.generation, cached.length)
        ):
            self.appended = start
        if start < stored:
            # a chunk holding ``start`` is rewritten whole: from its first message (the
            # history's unchanged prefix holds them; the slot row is locked by the UPDATE)
            params = {**self._params(), "start": start}
            first = conn.execute(q.straddle, params).scalar()
            if first is not None:  # (a driver's Decimal too; never fail open into a loss)
                first = int(first)
                if first < 0:
                    raise CorruptState(
                        f"{slot_name(*self.slot)}: a message chunk starts at seq {first}"
                    )
            if first is not None and first < start:
                start = first
                rows = self._encode(start)
                params["start"] = start
            conn.execute(q.delete_from, params)
            conn.execute(q.delete_chunks_from, params)
        if rows:
            self._insert(conn, q, start, rows)
        return version + 1, new_generation
