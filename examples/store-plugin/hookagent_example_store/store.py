"""``ExampleSQLiteStore``: the ``AgentStateStore`` contract on SQLite.

* versions and compare-and-set: ``INSERT`` creates (a second creator hits the primary key),
  ``UPDATE ... WHERE version = ?`` updates, both inside ``BEGIN IMMEDIATE``;
* fences: the newest lease epoch per session is kept and checked in the same transaction;
* writes proportional to the change: only ``state.context[unchanged_prefix:]`` is inserted
  when the save is at the loaded version; otherwise the history is rewritten;
* ids go through ``check_slot`` and ``encode_id``; the user_id is in every statement; every
  value is a bound parameter;
* everything is encoded (validated) before the transaction starts, so a bad state writes
  nothing.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Sequence

from hookagent import (
    AGENT_STATE_KEY,
    UNCONDITIONAL,
    AgentState,
    CorruptState,
    Fence,
    Fenced,
    InvalidState,
    Msg,
    SessionPage,
    VersionConflict,
    Versioned,
)
from hookagent.codec import decode_head, decode_msg, encode_head, encode_msg, loads
from hookagent.store import ExpectedVersion, check_id, check_slot, decode_id, encode_id
from hookagent.store.ids import (
    check_cursor,
    check_expected_version,
    check_fence,
    check_loaded_slot,
    check_page_limit,
    check_schema_writable,
    check_state_slot,
    slot_name,
)

from . import schema as sql
from .cache import MessageCache, Slot
from .db import Database, transaction


def _new_generation() -> str:
    return secrets.token_hex(8)


class ExampleSQLiteStore:
    """A versioned, fenced state store in one SQLite file (an example for plugin authors)."""

    def __init__(self, path: str, *, busy_timeout: float = 5.0, cache_slots: int = 256) -> None:
        self.path = path
        self._db = Database(path, busy_timeout=busy_timeout)
        self._cache = MessageCache(cache_slots)

    def __repr__(self) -> str:
        return f"ExampleSQLiteStore({self.path!r})"

    # ------------------------------------------------------------------ reads
    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        try:
            got = await self._db.run(self._load, _slot(user_id, session_id, key))
        except InvalidState as exc:  # the same error type, naming the slot
            raise type(exc)(f"{slot_name(user_id, session_id, key)}: {exc}") from exc
        if got.state is not None:  # bytes copied from another slot are corrupt here
            check_loaded_slot(got.state, user_id, session_id, key)
        return got

    def _load(self, conn: sqlite3.Connection, slot: Slot) -> Versioned:
        with transaction(conn, immediate=False):  # head and tail from one snapshot
            row = conn.execute(sql.SELECT_HEAD, slot).fetchone()
            if row is None:
                return Versioned(None, 0)
            version, generation, count, head = row
            cached = self._cache.get(slot, generation, count)
            rows = conn.execute(sql.SELECT_TAIL, (*slot, len(cached))).fetchall()
        if [seq for seq, _ in rows] != list(range(len(cached), count)):
            raise CorruptState(
                f"slot {slot} in {self.path!r}: the head says {count} messages, "
                f"the table holds seq {[seq for seq, _ in rows][:10]}..."
            )
        messages = cached + tuple(decode_msg(body) for _, body in rows)
        self._cache.put(slot, generation, messages)
        return Versioned(decode_head(head, messages), version)

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)

        def run(conn: sqlite3.Connection) -> bool:
            slot = _slot(user_id, session_id, key)
            return conn.execute(sql.SELECT_EXISTS, slot).fetchone() is not None

        return await self._db.run(run)

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)  # None or a str (InvalidStoreArgument otherwise)
        after = ""
        if cursor:  # "" is the first page, like None
            # the cursor is the encoded id of the last session of the previous page
            decode_id(check_id(cursor, "cursor"))  # InvalidIdentifier if we never made it
            after = cursor

        def run(conn: sqlite3.Connection) -> list[str]:
            params = (encode_id(user_id), after, limit + 1)
            return [r[0] for r in conn.execute(sql.SELECT_SESSIONS, params).fetchall()]

        encoded = await self._db.run(run)
        page = encoded[:limit]
        next_cursor = page[-1] if len(encoded) > limit else None
        return SessionPage(tuple(decode_id(s) for s in page), next_cursor)

    # ------------------------------------------------------------------ writes
    async def save_if_version(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected_version: ExpectedVersion,
        *,
        key: str = AGENT_STATE_KEY,
        fence: Fence | None = None,
    ) -> int:
        check_slot(user_id, session_id, key)
        check_expected_version(expected_version)
        check_fence(fence)  # None or a well-formed Fence (InvalidStoreArgument otherwise)
        check_state_slot(state, user_id, session_id, key)  # the state names this slot
        # validate before writing: encoding raises InvalidState/StateTooLarge, nothing is written
        head = encode_head(state)
        history = state.context
        # UNCONDITIONAL always rewrites: encode the whole history now
        base = 0 if expected_version is UNCONDITIONAL else history.unchanged_prefix
        tail = [encode_msg(m) for m in history[base:]]
        version = await self._db.run(
            self._save,
            (user_id, session_id, key),
            head,
            list(history),
            base,
            tail,
            expected_version,
            fence,
        )
        history.mark_committed()
        return version

    def _save(
        self,
        conn: sqlite3.Connection,
        ids: tuple[str, str, str],
        head: bytes,
        history: list[Msg],
        base: int,
        tail: list[bytes],
        expected: ExpectedVersion,
        fence: Fence | None,
    ) -> int:
        user_id, session_id, key = ids
        slot = _slot(*ids)
        with transaction(conn, immediate=True):
            if fence is not None:
                _check_fence(conn, slot[:2], fence, user_id, session_id)
            row = conn.execute(sql.SELECT_HEAD, slot).fetchone()
            if row is not None:  # never overwrite a newer schema (UNCONDITIONAL included)
                check_schema_writable(_stored_schema(row[3], ids), *ids)
            current = 0 if row is None else row[0]
            if expected is not UNCONDITIONAL and expected != current:
                raise VersionConflict(user_id, session_id, key, expected, current)
            if row is not None and expected == current and 0 < base <= row[2]:
                # append: keep the unchanged prefix, drop a stored tail past it, add the new one
                generation = row[1] if base == row[2] else _new_generation()
                if base < row[2]:
                    conn.execute(sql.DELETE_MESSAGES_FROM, (*slot, base))
                start, bodies = base, tail
            else:
                # rewrite: after a clear or compaction, an UNCONDITIONAL save, or on create
                # (a prefix not encoded yet is encoded here: an error rolls everything back)
                generation = _new_generation()
                conn.execute(sql.DELETE_MESSAGES, slot)
                start, bodies = 0, [encode_msg(m) for m in history[:base]] + tail
            conn.executemany(
                sql.INSERT_MESSAGE,
                [(*slot, start + i, body) for i, body in enumerate(bodies)],
            )
            version = current + 1
            if row is None:
                try:
                    conn.execute(
                        sql.INSERT_HEAD,
                        (*slot, version, generation, len(history), head),
                    )
                except sqlite3.IntegrityError:  # created meanwhile: the create lost the race
                    raise VersionConflict(user_id, session_id, key, 0, None) from None
            else:
                updated = conn.execute(
                    sql.UPDATE_HEAD,
                    (version, generation, len(history), head, *slot, current),
                ).rowcount
                if updated != 1:
                    raise VersionConflict(user_id, session_id, key, current, None)
        self._cache.put(slot, generation, tuple(history))
        return version

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        user, session = encode_id(user_id), encode_id(session_id)
        params: tuple[str, ...] = (user, session)
        statements = (sql.DELETE_SESSION_HEADS, sql.DELETE_SESSION_MESSAGES)
        if key is not None:
            params = (user, session, encode_id(key))
            statements = (sql.DELETE_HEAD, sql.DELETE_MESSAGES)

        def run(conn: sqlite3.Connection) -> bool:
            with transaction(conn, immediate=True):
                existed = conn.execute(statements[0], params).rowcount > 0
                conn.execute(statements[1], params)
            self._cache.drop(user, session, None if key is None else params[2])
            return existed

        return await self._db.run(run)

    async def aclose(self) -> None:
        await self._db.aclose()


def _stored_schema(head: bytes, ids: tuple[str, str, str]) -> object:
    """The stored head's ``schema_version``; a head that is not JSON is ``CorruptState``."""
    try:
        doc = loads(head, what="state head")
    except InvalidState as exc:
        raise CorruptState(f"{slot_name(*ids)}: {exc}; nothing was written") from None
    return doc.get("schema_version") if isinstance(doc, dict) else None


def _slot(user_id: str, session_id: str, key: str) -> Slot:
    return (encode_id(user_id), encode_id(session_id), encode_id(key))


def _check_fence(
    conn: sqlite3.Connection, where: Sequence[str], fence: Fence, user_id: str, session_id: str
) -> None:
    """Refuse a lease older than the newest seen (or the same epoch held by another owner).

    ``save_if_version`` checked its shape first (``check_fence``)."""
    row = conn.execute(sql.SELECT_FENCE, tuple(where)).fetchone()
    if row is not None and (
        fence.epoch < row[0] or (fence.epoch == row[0] and fence.owner != row[1])
    ):
        raise Fenced(
            f"lease epoch {fence.epoch} of {fence.owner!r} is stale: epoch {row[0]} of "
            f"{row[1]!r} holds user_id={user_id!r} session_id={session_id!r}"
        )
    if row is None or fence.epoch > row[0]:
        conn.execute(sql.UPSERT_FENCE, (*where, fence.epoch, fence.owner))
