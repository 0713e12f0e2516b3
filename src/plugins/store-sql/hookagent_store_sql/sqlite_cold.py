"""SQLite's cold load (a slot this instance holds nothing of), read while it is decoded.

Why: reading 4,000 messages costs SQLite about 10 ms in the file's thread and decoding them
20-30 ms on the event loop; one after the other they are the whole W3. Here the thread reads
the history in pages, each page one ``group_concat`` (SQLite builds it without holding
Python's GIL), and hands each page over as soon as it is read, so the event loop decodes
page *k* while the thread reads page *k+1*: first the slot's message rows (what older
versions wrote: ``ROWS`` of them a page), then its chunks (a row per save: ``CHUNKS`` a page).

Consistency: the head and every page are read in one read transaction (``BEGIN`` ..
``ROLLBACK``), so one WAL snapshot. Each page is checked: rows exactly the next ``seq``s in
order (``group_concat(seq)`` is compared with the range), chunks each starting where the
last one ended with exactly ``n`` records, as many bodies as rows (a body never holds a
NUL: the codec's JSON escapes control characters), and all of it ending exactly at
``message_count``. Anything else (a gap, an overlap, another order, a NUL, anything past the
count) returns ``None`` and the store reads the rows the ordinary way, which reports a real
corruption precisely; no page at all is read for a ``message_count`` out of range (the
store reports it).
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

ROWS = 512
CHUNKS = 128

_DONE = object()


class Mismatch(Exception):
    """A page is not what it should be: read the ordinary way instead."""


def head_sql(slots: str) -> str:
    return f"SELECT version, generation, message_count, head FROM {slots} WHERE user_id = ? AND slot_hash = ?"  # noqa: S608


def rows_sql(messages: str) -> str:
    return (
        "SELECT count(*), max(seq), group_concat(seq), group_concat(body, char(0)) FROM ("  # noqa: S608
        f"SELECT seq, body FROM {messages} WHERE user_id = ? AND slot_hash = ? AND seq >= ? "
        "ORDER BY seq LIMIT ?)"
    )


def chunks_sql(chunks: str) -> str:
    return (
        "SELECT count(*), max(end_seq), group_concat(end_seq), group_concat(n), "  # noqa: S608
        "group_concat(body, char(0)) FROM ("
        f"SELECT end_seq, n, body FROM {chunks} WHERE user_id = ? AND slot_hash = ? "
        "AND end_seq > ? ORDER BY end_seq LIMIT ?)"
    )


def read_in_thread(
    conn: sqlite3.Connection,
    sqls: tuple[str, str, str],
    user_id: str,
    h: str,
    emit: Callable[[Any], None],
) -> None:
    """Runs in the file's thread: emit the head row (or None), the row pages, the chunk
    pages, then None."""
    conn.execute("BEGIN")  # one read transaction: the head and every page, one snapshot
    try:
        head = conn.execute(sqls[0], (user_id, h)).fetchone()
        emit(head)
        if head is None or not count_ok(head[2]):
            return  # the store reports a count out of range
        after = 0
        while True:
            page = conn.execute(sqls[1], (user_id, h, after, ROWS)).fetchone()
            emit(("r", page))
            if page[0] < ROWS:
                break
            after = page[1] + 1
        after = 0
        while True:
            page = conn.execute(sqls[2], (user_id, h, after, CHUNKS)).fetchone()
            emit(("c", page))
            if page[0] < CHUNKS:
                break
            after = page[1]
        emit(None)
    finally:
        conn.rollback()


async def decode_stream(
    queue: asyncio.Queue[Any], done: asyncio.Future[Any]
) -> tuple[Any, list[Msg]] | None:
    """On the event loop: (head row, decoded messages), None if there is no slot; raises
    ``Mismatch`` if a page is not exactly what was asked for."""
    head = await _next(queue, done)
    if head is None:
        return None
    if not count_ok(head[2]):
        await done
        return head, []  # the store reports the count
    count, pos = head[2], 0
    messages: list[Msg] = []
    while (item := await _next(queue, done)) is not None:
        kind, page = item
        if not page[0]:
            continue
        if kind == "r":
            pos = _rows(page, pos, messages)
        else:
            pos = _chunks(page, pos, messages)
        if pos > count:
            raise Mismatch
    if pos != count:
        raise Mismatch
    await done  # the read transaction is closed; errors of the thread surface here
    return head, messages


def _rows(page: Any, pos: int, messages: list[Msg]) -> int:
    n: int = page[0]
    seqs, blob = page[2], page[3]
    if seqs != ",".join(map(str, range(pos, pos + n))):
        raise Mismatch
    _decode(blob.split("\x00"), n, messages)
    return pos + n


def _chunks(page: Any, pos: int, messages: list[Msg]) -> int:
    n, _, ends, ns, blob = page
    try:
        pairs = list(zip(map(int, ends.split(",")), map(int, ns.split(",")), strict=True))
    except ValueError:
        raise Mismatch from None
    bodies = blob.split("\x00")
    if len(pairs) != n or len(bodies) != n:
        raise Mismatch
    records: list[str] = []
    for (end, k), body in zip(pairs, bodies, strict=True):
        if k < 1 or end - k != pos:
            raise Mismatch
        got = body.split("\n")
        if len(got) != k:
            raise Mismatch
        records += got
        pos = end
    _decode(records, len(records), messages)
    return pos


def _decode(bodies: list[str], n: int, messages: list[Msg]) -> None:
    if len(bodies) != n:
        raise Mismatch
    try:
        messages.extend(decode_msgs(bodies))
    except (InvalidState, InvalidMessage):
        raise Mismatch from None  # the row read names the slot and the row


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
