"""The per-user index of session ids: a sorted set per user, listed with ZRANGEBYLEX.

Never a ``SCAN MATCH`` glob built from ids (globs reach other tenants' keys). In a cluster
the index lives in another slot than the session's keys, so the store writes it before a
session is created and cleans it after one is deleted (with a re-check); listing skips and
removes a stale entry. Outside a cluster the scripts keep it in the same atomic step.
"""

from __future__ import annotations

from typing import Any

from hookagent.errors import CorruptState, InvalidIdentifier
from hookagent.store.base import SessionPage
from hookagent.store.ids import check_cursor, check_id, check_page_limit, decode_id, encode_id

from .errors import translated
from .keys import KeyLayout


def _s(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


class SessionIndex:
    """Listing and index upkeep of ``RedisAgentStateStore`` (which sets both attributes)."""

    client: Any
    layout: KeyLayout

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)
        index = self._index_key(user_id)
        # "" lists from the start, like None: "(" + encode_id("") would start after "~"
        start = "(" + encode_id(cursor) if cursor else "-"
        found: list[str] = []
        while len(found) <= limit:
            want = limit + 1 - len(found)
            with translated("list"):
                members = [_s(m) for m in await self.client.zrangebylex(index, start, "+", 0, want)]
            if not members:
                break
            ids = [decode_member(m) for m in members]
            alive = await self._alive(user_id, ids)
            for sid, ok in zip(ids, alive, strict=True):
                if ok:
                    found.append(sid)
                else:
                    await self._index_remove_checked(user_id, sid)
            start = "(" + members[-1]
            if len(members) < want:
                break
        page = tuple(found[:limit])
        return SessionPage(page, page[-1] if len(found) > limit else None)

    # what is indexed, and how a session is told alive: the state store's sessions (a key
    # set) here; the session log overrides both (its own index, a head at seq > 0)
    def _index_key(self, user_id: str) -> str:
        return self.layout.user_index(user_id)

    def _probe(self, client: Any, user_id: str, session_id: str) -> Any:
        return client.exists(self.layout.session(user_id, session_id).keyset)

    def _is_alive(self, answer: Any) -> bool:
        return bool(answer)

    async def _alive(self, user_id: str, session_ids: list[str]) -> list[bool]:
        with translated("list"):
            async with self.client.pipeline(transaction=False) as pipe:
                for sid in session_ids:
                    self._probe(pipe, user_id, sid)
                return [self._is_alive(x) for x in await pipe.execute()]

    async def _index_add(self, user_id: str, session_id: str) -> None:
        with translated("index"):
            await self.client.zadd(self._index_key(user_id), {encode_id(session_id): 0})

    async def _index_remove_checked(self, user_id: str, session_id: str) -> None:
        """ZREM, then re-add if the session exists: a racing create is never left unindexed."""
        index, member = self._index_key(user_id), encode_id(session_id)
        with translated("index"):
            await self.client.zrem(index, member)
            if self._is_alive(await self._probe(self.client, user_id, session_id)):
                await self.client.zadd(index, {member: 0})


class LogIndex(SessionIndex):
    """The per-user index of sessions with a log (``<prefix>:{U}:logs``): a session is
    listed while its head's seq is above 0, as the in-memory log lists."""

    def __init__(self, client: Any, layout: KeyLayout) -> None:
        self.client, self.layout = client, layout

    def _index_key(self, user_id: str) -> str:
        return self.layout.log_index(user_id)

    def _probe(self, client: Any, user_id: str, session_id: str) -> Any:
        return client.hget(self.layout.session(user_id, session_id).log_keys()[0], "s")

    def _is_alive(self, answer: Any) -> bool:
        text = None if answer is None else _s(answer)
        return text is not None and text != "0"  # a damaged seq is listed: reads fail closed


def decode_member(member: str) -> str:
    try:
        return decode_id(member)
    except InvalidIdentifier as exc:
        raise CorruptState(
            f"session index holds a member that is not an encoded id: {exc}"
        ) from exc
