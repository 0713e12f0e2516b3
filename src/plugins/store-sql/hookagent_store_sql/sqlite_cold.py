"""SQLite's cold load (a slot this instance holds nothing of), read while it is decoded.

Why: reading 4,000 messages costs SQLite about 10 ms in the file's thread and decoding them
20-30 ms on the event loop; one after the other they are the whole W3. Here the thread reads
the history in chunks of ``CHUNK`` messages, each chunk one ``group_concat`` (SQLite builds
it without holding Python's GIL), and hands each chunk over as soon as it is read, so the
event loop decodes chunk *k* while the thread reads chunk *k+1*.

Consistency: the head and every chunk are read in one read transaction (``BEGIN`` ..
``ROLLBACK``), so one WAL snapshot. Each chunk is checked: exactly the ``seq`` range asked
for, in order (``group_concat(seq)`` is compared with the range), and as many bodies as
rows (a body never holds a NUL: the codec's JSON escapes control characters); then one
index probe says no row lies past ``message_count``. Anything else (a gap, another order, a
NUL, a row past the count) returns ``None`` and the store reads the rows the ordinary way,
which reports a real corruption precisely; the thread stops at the first short chunk, and
reads no chunk at all for a ``message_count`` out of range (the store reports it).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

from hookagent.codec import decode_msgs
from hookagent.errors import InvalidMessage, InvalidState
from hookagent.messages import Msg

from .verify import count_ok

CHUNK = 512

_DONE = object()


class Mismatch(Exception):
    """A chunk is not what it should be: read the ordinary way instead."""


def head_sql(slots: str) -> str:
    return f"SELECT version, generation, message_count, head FROM {slots} WHERE user_id = ? AND slot_hash = ?"  # noqa: S608


def chunk_sql(messages: str) -> str:
    return (
        "SELECT count(*), min(seq), max(seq), group_concat(seq), group_concat(body, char(0)) "  # noqa: S608
        f"FROM {messages} WHERE user_id = ? AND slot_hash = ? AND seq >= ? AND seq < ?"
    )


def past_sql(messages: str) -> str:
    return f"SELECT 1 FROM {messages} WHERE user_id = ? AND slot_hash = ? AND seq >= ? LIMIT 1"  # noqa: S608


def read_in_thread(
    conn: sqlite3.Connection,
    sqls: tuple[str, str, str],
    user_id: str,
    h: str,
    emit: Callable[[Any], None],
) -> None:
    """Runs in the file's thread: emit the head row (or None), then one row per chunk."""
    conn.execute("BEGIN")  # one read transaction: the head and every chunk, one snapshot
    try:
        head = conn.execute(sqls[0], (user_id, h)).fetchone()
        emit(head)
        if head is None or not count_ok(head[2]):
            return  # the store reports a count out of range
        count = head[2]
        for a in range(0, count, CHUNK):
            chunk = conn.execute(sqls[1], (user_id, h, a, min(a + CHUNK, count))).fetchone()
            emit(chunk)
            if chunk[0] != min(a + CHUNK, count) - a:
                return  # rows are missing: the event loop stops here too
        emit(conn.execute(sqls[2], (user_id, h, count)).fetchone())  # a row past the count?
    finally:
        conn.rollback()


async def decode_stream(
    queue: asyncio.Queue[Any], done: asyncio.Future[Any]
) -> tuple[Any, list[Msg]] | None:
    """On the event loop: (head row, decoded messages), None if there is no slot; raises
    ``Mismatch`` if a chunk is not exactly what was asked for."""
    head = await _next(queue, done)
    if head is None:
        return None
    if not count_ok(head[2]):
        await done
        return head, []  # the store reports the count
    count, messages = head[2], []
    for a in range(0, count, CHUNK):
        b = min(a + CHUNK, count)
        n, lo, hi, seqs, blob = await _next(queue, done)
        if n != b - a or lo != a or hi != b - 1 or seqs != ",".join(map(str, range(a, b))):
            raise Mismatch
        bodies = blob.split("\x00")
        if len(bodies) != n:
            raise Mismatch
        try:
            messages.extend(decode_msgs(bodies))
        except (InvalidState, InvalidMessage):
            raise Mismatch from None  # the row read names the slot and the row
    if await _next(queue, done) is not None:
        raise Mismatch  # a row past message_count
    await done  # the read transaction is closed; errors of the thread surface here
    return head, messages


async def _next(queue: asyncio.Queue[Any], done: asyncio.Future[Any]) -> Any:
    """The next item, or the thread's error if it stopped early."""
    if queue.empty():
        getter = asyncio.ensure_future(queue.get())
        await asyncio.wait({getter, done}, return_when=asyncio.FIRST_COMPLETED)
        if not getter.done():
            getter.cancel()
            done.result()  # raises the thread's error
            raise Mismatch  # finished without the item: never expected
        return getter.result()
    return queue.get_nowait()
