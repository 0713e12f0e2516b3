"""A save on the direct path (``pg_direct`` or ``sqlite_direct``), or None for the
transaction path: the shapes the direct path takes, and what a lost connection means."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from . import pg_direct
from .errors import TRANSLATED, is_disconnect, is_duplicate, is_retryable, translate
from .migrations import utcnow
from .pg_direct import PgDirect
from .save import SavePlan, new_generation, rows_past_count
from .sqlite_direct import SqliteDirect
from .verify import head_token

ReadWith = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]


async def direct_save(
    direct: PgDirect | SqliteDirect, plan: SavePlan, read_with: ReadWith
) -> tuple[int, int] | None:
    """(new version, new generation) of an append or a create done on the direct path
    (PostgreSQL: one autocommit statement; SQLite: one transaction in the file's thread);
    None: use the transaction path (another shape of save, the CAS did not match, or it
    certainly did not run). ``read_with`` is the store's retrying read, for the read-back."""
    key = (plan.u, plan.h, plan.s, plan.k)
    count = plan.count
    now = utcnow()  # sent, and read back: with the head, it tells our write from another's
    attempt: Callable[[], Awaitable[bool]]
    if plan.is_append():
        cached = plan.cached
        assert cached is not None
        rows = plan.new_chunks()
        backend = "sqlite" if isinstance(direct, SqliteDirect) else "postgresql"
        cas = (cached.version, cached.generation, plan.base, head_token(backend, cached.head))
        new = (cached.version + 1, count, plan.head, now)
        before, result = cached.version, (cached.version + 1, cached.generation)
        attempt = lambda: direct.append(key, cas, new, rows)  # noqa: E731
    elif plan.is_create():
        rows = plan.new_chunks()
        generation = new_generation()
        before, result = -1, (1, generation)  # no version -1: "absent" stays unknown
        attempt = lambda: direct.create(key, generation, plan.head, now, rows)  # noqa: E731
    else:
        return None
    try:
        applied = await attempt()
    except TRANSLATED as exc:
        if is_retryable(exc):
            return None  # a deadlock/serialization victim or SQLite busy: nothing applied
        if getattr(exc, pg_direct.NOT_SENT, False):
            return None  # it never reached the server (a closed connection, a failed connect)
        if is_duplicate(exc):  # a new chunk met a stored one past message_count
            raise rows_past_count(plan.slot) from None
        if not is_disconnect(exc):
            raise translate(exc, "save") from exc
        # the connection went: the statement may or may not have run; look
        seq = rows[0][0] if rows else 0  # the first new chunk's end_seq
        applied = await pg_direct.resolve(
            lambda: read_with("save", lambda: direct.probe(plan.u, plan.h, seq, plan.head, now)),
            before=before,
            after=(*result, count),
            first_body=rows[0][2] if rows else None,
            cause=exc,
        )
    if plan.is_append():
        # not applied: the row is not the one we hold, the transaction path reads it
        plan.stale = not applied
        plan.appended = plan.base if applied else None
    return result if applied else None
