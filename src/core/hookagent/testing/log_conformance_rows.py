"""The conformance checks of a backend's optional cold-read fast paths, ``read_rows_after``
and ``read_commits_after``.

A backend may offer ``read_rows_after(user_id, session_id, seq)``: what ``read_after(seq)``
returns, as ``hookagent.sessionlog.Row`` tuples (a cold projection applies them without
building ``LogEvent`` envelopes). It must be ``read_after`` exactly: the same events, never
an orphan, and ``LogCorrupt`` where ``read_after`` fails closed. Without the method these
checks are skipped as "not run: ...".

A backend may offer ``read_commits_after(user_id, session_id, seqs)``: the head's seq and,
for each seq, the raw commit holding ``seq + 1`` (first_seq, last_seq, bytes; None if it has
none), in one read, so that ``hookagent.sessionlog.point_read`` of each is ``read_after(seq,
1)`` exactly: the same event, never an orphan, ``LogCorrupt`` where ``read_after(seq, 1)``
fails closed; and many seqs at once what each one alone gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ..codec import message_doc, msg_from_dict
from ..errors import LogCorrupt
from ..messages import Msg, TextBlock, ToolResultBlock
from ..sessionlog.base import LogEvent, SessionLog
from ..sessionlog.batch import point_read
from .log_conformance_hooks import LONG, LogHooks, batch, written

NOT_RUN_ROWS = "not run: the backend has no read_rows_after (an optional fast path)"
NOT_RUN_COMMIT = "not run: the backend has no read_commits_after (an optional fast path)"


def as_rows(events: Sequence[LogEvent]) -> list[tuple[Any, ...]]:
    return [
        (e.seq, e.event_id, e.type, e.occurred_at, dict(e.payload), e.required, e.run_id, e.turn_id)
        for e in events
    ]


def public(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows as ``read_after`` shows them: a row may hold a message as its stored record (a
    format-2 array, ``decode_rows``), which ``read_after`` gives as its ``message_doc``."""
    out = []
    for row in rows:
        payload = row[4]
        if type(payload.get("m")) is list:
            payload = {**payload, "m": message_doc(msg_from_dict(payload["m"]))}
        out.append((*row[:4], payload, *row[5:]))
    return out


def _rows(log: SessionLog) -> Any:
    read = getattr(log, "read_rows_after", None)
    if read is None:
        pytest.skip(NOT_RUN_ROWS)
    return read


def _commit_reader(log: SessionLog) -> Any:
    read = getattr(log, "read_commits_after", None)
    if read is None:
        pytest.skip(NOT_RUN_COMMIT)

    async def point(user_id: str, session_id: str, seq: int) -> list[LogEvent]:
        head, commits = await read(user_id, session_id, [seq])
        assert len(commits) == 1, commits
        return point_read(head, commits[0], seq, where="conformance")

    return point


async def _outcome(read: Any, *args: Any) -> Any:
    """What a read returns as rows, or ``LogCorrupt`` (the type) if it fails closed."""
    try:
        return as_rows(await read(*args))
    except LogCorrupt:
        return LogCorrupt


class RowsLogConformance(LogHooks):
    """Mixed into ``SessionLogConformance``."""

    async def test_read_rows_after_is_read_after(self, log: SessionLog) -> None:
        rows = _rows(log)
        writer = await written(log, "u", "s", 2, 3)
        mixed = [
            LogEvent("run/started", {}, False, "r1", "t1", occurred_at=1.5),
            LogEvent("message/appended", {"tag": "m", "i": 0}, True, "r1", "t1", occurred_at=2),
            LogEvent("acme/note", {"n": [1, {"x": None}]}, False, None, "t2", occurred_at=3.25),
            LogEvent("message/appended", {"m": Msg.user("hi")}, True, "r1", "t1", occurred_at=4.0),
            LogEvent(
                "tool/result",
                {"id": "c1", "m": Msg("tool", [ToolResultBlock("c1", "f", (TextBlock("ok"),))])},
                occurred_at=4.5,
            ),
        ]
        await log.commit(writer, "mixed", 5, mixed)
        events = await log.read_after("u", "s", 0)
        assert public(await rows("u", "s", 0)) == as_rows(events)
        assert msg_from_dict(events[-2].payload["m"]).text == "hi"  # read back as message_doc
        for after in range(11):
            got = public(await rows("u", "s", after))
            want = as_rows(await log.read_after("u", "s", after))
            assert got == want, f"read_rows_after({after}) != read_after({after})"
        assert await rows("u", "never", 0) == []

    async def test_read_rows_after_never_reads_an_orphan(self, log: SessionLog) -> None:
        rows = _rows(log)
        await written(log, "u", "s", 2)
        await self.orphan(log, "u", "s", "orphan", batch("orphan", 3))
        assert [r[0] for r in await rows("u", "s", 0)] == [1, 2]
        assert await rows("u", "s", 2) == []
        await log.acquire("u", "fresh", "w", LONG)
        await self.orphan(log, "u", "fresh", "first", batch("first", 1))
        assert await rows("u", "fresh", 0) == []

    async def test_read_rows_after_fails_closed_where_read_after_does(
        self, log: SessionLog
    ) -> None:
        rows = _rows(log)
        writer = await written(log, "u", "s", 2)
        await self.bad_head(log, "u", "s", 4)  # the head past its commits
        for after in (0, 1, 2, 3):
            with pytest.raises(LogCorrupt):
                await rows("u", "s", after)
        await log.commit(writer, "b1", 4, batch("b1", 1))  # seqs 3..4 missing under it
        for after in (0, 1, 2):
            with pytest.raises(LogCorrupt):
                await rows("u", "s", after)

    async def test_read_commits_after_is_a_point_read(self, log: SessionLog) -> None:
        point = _commit_reader(log)
        writer = await written(log, "u", "s", 1, 3)
        mixed = [
            LogEvent("acme/note", {"n": [1, {"x": None}]}, False, None, "t2", occurred_at=3.25),
            LogEvent("message/appended", {"m": Msg.user("hi")}, True, "r1", "t1", occurred_at=4.0),
        ]
        await log.commit(writer, "mixed", 4, mixed)
        for after in range(8):
            got = as_rows(await point("u", "s", after))
            want = as_rows(await log.read_after("u", "s", after, 1))
            assert got == want, f"read_commits_after([{after}]) != read_after({after}, 1)"
        assert msg_from_dict((await point("u", "s", 5))[0].payload["m"]).text == "hi"
        assert await point("u", "never", 0) == []
        read = log.read_commits_after  # type: ignore[attr-defined]
        seqs = [5, 0, 3, 7, 1, 1, 4]  # many at once, in any order, repeated: each as alone
        head, many = await read("u", "s", seqs)
        assert head == (await log.head("u", "s")).seq and len(many) == len(seqs)
        for seq, commit in zip(seqs, many, strict=True):
            assert (head, [commit]) == await read("u", "s", [seq])
        assert await read("u", "s", []) == (head, [])
        assert (await read("u", "never", [0, 3]))[1] == [None, None]

    async def test_read_commits_after_never_reads_an_orphan(self, log: SessionLog) -> None:
        point = _commit_reader(log)
        await written(log, "u", "s", 2)
        await self.orphan(log, "u", "s", "orphan", batch("orphan", 3))
        assert [e.seq for e in await point("u", "s", 1)] == [2]
        assert await point("u", "s", 2) == []
        await log.acquire("u", "fresh", "w", LONG)
        await self.orphan(log, "u", "fresh", "first", batch("first", 1))
        assert await point("u", "fresh", 0) == []

    async def test_read_commits_after_fails_closed_where_read_after_does(
        self, log: SessionLog
    ) -> None:
        point = _commit_reader(log)
        writer = await written(log, "u", "s", 2)
        await self.bad_head(log, "u", "s", 4)  # the head past its commits
        for after in (2, 3):
            with pytest.raises(LogCorrupt):
                await point("u", "s", after)
        await log.commit(writer, "b1", 4, batch("b1", 1))  # seqs 3..4 missing under it
        for after in range(7):
            want = await _outcome(log.read_after, "u", "s", after, 1)
            assert await _outcome(point, "u", "s", after) == want, f"after={after}"
