"""Conformance checks of what goes in and comes back: the event envelope, bad inputs (typed
errors, nothing stored), user isolation, listing and delete."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import orjson
import pytest

from ..errors import (
    InvalidIdentifier,
    InvalidState,
    InvalidStoreArgument,
    LeaseHeld,
    LogFenced,
    StateTooLarge,
)
from ..sessionlog.base import LOG_SCHEMA_VERSION, LogEvent, LogHead, LogWriter, SessionLog
from ..sessionlog.batch import MAX_BATCH_BYTES, MAX_BATCH_EVENTS
from .corpus import HOSTILE_IDS, INVALID_IDS
from .log_conformance_hooks import LONG, LogHooks, batch, seqs, snapshot, tags, written
from .pairs import colliding_pairs

Call = Callable[[Any], Awaitable[Any]]


def envelope_events() -> list[LogEvent]:
    """Events that together use every envelope field and every JSON value kind."""
    payload = {
        "text": "h\u00e9llo \U0001f600 \u202e tab\tline\nend",
        "nested": {"a": [1, 2.5, None, True, False, "x", {"k": [[], {}]}]},
        "float": 0.1,
        "tiny": -1.5e-300,
        "whole": 1.0,
        "big": 2**53 + 1,
        "negative": -7,
        "none": None,
        "": "the empty key",
    }
    return [
        LogEvent("message/appended", payload, False, None, None, "evt-1", 1767225600.123456),
        LogEvent("acme/review_note", {}, True, "run-\u00e9", "turn-7", "evt-\U0001f600", 0.0),
        LogEvent("state/checkpoint", {"state": {"k": "v"}}, True, "r1", None, occurred_at=12),
        LogEvent("tool/called", {"args": "x" * 20_000}, False, None, "t2", occurred_at=time.time()),
    ]


def _canonical(event: LogEvent) -> bytes:
    doc = attrs.asdict(event)
    doc["types"] = [type(event.occurred_at).__name__, type(event.required).__name__]
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


async def _raises(kind: type[Exception], call: Awaitable[Any], what: str) -> None:
    try:
        await call
    except kind:
        return
    except Exception as exc:  # a typed error of another class
        raise AssertionError(
            f"{what}: raised {type(exc).__name__}: {exc}, not {kind.__name__}"
        ) from exc
    raise AssertionError(f"{what}: accepted, expected {kind.__name__}")


class InputLogConformance(LogHooks):
    """Mixed into ``SessionLogConformance``."""

    # ------------------------------------------------------------------ the envelope

    async def test_the_event_envelope_round_trips_exactly(self, log: SessionLog) -> None:
        sent = envelope_events()
        writer = await log.acquire("u", "s", "w", LONG)
        await log.commit(writer, "b", 0, sent[:1])
        await log.commit(writer, "c", 1, sent[1:])
        got = await log.read_after("u", "s", 0)
        assert len(got) == len(sent), f"{len(got)} events read, {len(sent)} committed"
        for n, (was, back) in enumerate(zip(sent, got, strict=True), start=1):
            assert back.seq == n and back.schema_version == LOG_SCHEMA_VERSION
            assert _canonical(back) == _canonical(attrs.evolve(was, seq=n)), (
                f"event {n} ({was.type}) did not round-trip:\n sent {was}\n read {back}"
            )
        assert isinstance(got[0].payload, dict), "a payload reads back as a plain dict"

    async def test_a_large_batch_round_trips_and_pages(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", LONG)
        big = [LogEvent("a/b", {"tag": "big", "i": i, "text": "x" * 200}) for i in range(3000)]
        result = await log.commit(writer, "big", 0, big)
        assert (result.first_seq, result.last_seq) == (1, 3000)
        await log.commit(writer, "small", 3000, batch("small", 1))
        got = await log.read_after("u", "s", 0)
        assert seqs(got) == list(range(1, 3002)) and got[2999].payload["i"] == 2999
        assert seqs(await log.read_after("u", "s", 1500, 3)) == [1501, 1502, 1503]
        assert tags(await log.read_after("u", "s", 2999)) == ["big.2999", "small.0"]
        too_many = batch("many", MAX_BATCH_EVENTS + 1)
        await _raises(InvalidState, log.commit(writer, "many", 3001, too_many), "10,001 events")
        huge = [LogEvent("a/b", {"text": "x" * MAX_BATCH_BYTES})]
        await _raises(StateTooLarge, log.commit(writer, "huge", 3001, huge), "a batch over 8 MiB")
        assert (await log.head("u", "s")).seq == 3001, "a refused batch moved the head"

    # ------------------------------------------------------------------ bad inputs

    async def test_bad_ids_are_refused(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 1)
        before = await snapshot(log, "u", "s")
        raw: Any = log  # the calls below pass what the types forbid, on purpose
        one = batch("x", 1)
        as_session: list[tuple[str, Call]] = [
            ("head", lambda b: raw.head("u", b)),
            ("acquire", lambda b: raw.acquire("u", b, "w", LONG)),
            ("seal", lambda b: raw.seal("u", b, "w")),
            ("is_sealed", lambda b: raw.is_sealed("u", b, "w")),
            ("read_after", lambda b: raw.read_after("u", b, 0)),
            ("delete", lambda b: raw.delete("u", b)),
            ("commit", lambda b: raw.commit(attrs.evolve(writer, session_id=b), "x", 1, one)),
        ]
        as_user: list[tuple[str, Call]] = [
            ("head", lambda b: raw.head(b, "s")),
            ("acquire", lambda b: raw.acquire(b, "s", "w", LONG)),
            ("list_session_ids", lambda b: raw.list_session_ids(b)),
            ("read_after", lambda b: raw.read_after(b, "s", 0)),
            ("commit", lambda b: raw.commit(attrs.evolve(writer, user_id=b), "x", 1, one)),
        ]
        as_argument: list[tuple[str, Call]] = [
            ("acquire(owner)", lambda b: raw.acquire("u", "s", b, LONG)),
            ("seal(owner)", lambda b: raw.seal("u", "s", b)),
            ("is_sealed(owner)", lambda b: raw.is_sealed("u", "s", b)),
            ("commit(batch_id)", lambda b: raw.commit(writer, b, 1, one)),
        ]
        for bad in INVALID_IDS:
            for what, call in as_session:
                await _raises(InvalidIdentifier, call(bad), f"{what} with session_id {bad!r}")
            for what, call in as_user if bad != "" else []:  # "" is the anonymous user
                await _raises(InvalidIdentifier, call(bad), f"{what} with user_id {bad!r}")
            for what, call in as_argument:
                await _raises(InvalidStoreArgument, call(bad), f"{what} {bad!r}")
        assert await snapshot(log, "u", "s") == before, "a refused call changed the log"
        assert (await log.list_session_ids("u")).session_ids == ("s",)

    async def test_bad_arguments_are_refused_and_store_nothing(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 1)
        before = await snapshot(log, "u", "s")
        raw: Any = log
        for lease in (0, -1.0, math.nan, math.inf, "10", None, True, 24 * 3600.0 + 1):
            await _raises(
                InvalidStoreArgument, raw.acquire("u", "t", "w", lease), f"acquire lease {lease!r}"
            )
            await _raises(InvalidStoreArgument, raw.renew(writer, lease), f"renew lease {lease!r}")
        fakes = (None, "w", {"owner": "w", "epoch": 1}, attrs.evolve(writer, epoch=0))
        by_writer: list[tuple[str, Call]] = [
            ("commit", lambda f: raw.commit(f, "x", 1, batch("x", 1))),
            ("renew", lambda f: raw.renew(f, LONG)),
            ("release", lambda f: raw.release(f)),
        ]
        for fake in fakes:
            for what, call in by_writer:
                await _raises(InvalidStoreArgument, call(fake), f"{what} with writer {fake!r}")
        reads = ((-1, None), ("0", None), (None, None), (1.0, None), (0, 0), (0, -1), (0, "5"))
        for seq, limit in (*reads, (0, True)):
            await _raises(
                InvalidStoreArgument,
                raw.read_after("u", "s", seq, limit),
                f"read_after(seq={seq!r}, limit={limit!r})",
            )
        for limit, cursor in ((0, None), (-1, None), ("5", None), (10, 5)):
            await _raises(
                InvalidStoreArgument,
                raw.list_session_ids("u", limit=limit, cursor=cursor),
                f"list_session_ids(limit={limit!r}, cursor={cursor!r})",
            )
        assert await snapshot(log, "u", "s") == before, "a refused call changed the log"
        assert (await log.head("u", "t")).epoch == 0, "a refused acquire took a lease"

    async def test_bad_batches_are_refused_and_store_nothing(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 1)
        committed = await log.read_after("u", "s", 0)
        before = await snapshot(log, "u", "s")
        good = batch("x", 1)
        cases: list[tuple[type[Exception], Any, str]] = [
            (InvalidState, [], "an empty batch"),
            (InvalidState, "message/appended", "a str"),
            (InvalidState, [*good, {"type": "message/appended"}], "a dict among events"),
            (InvalidState, [None], "None"),
            (InvalidStoreArgument, [*good, committed[0]], "an event read back (seq set)"),
            (InvalidState, [LogEvent("appended")], "a type without '/'"),
            (InvalidState, [LogEvent("message/")], "a type 'message/'"),
            (InvalidState, [LogEvent("/appended")], "a type '/appended'"),
            (InvalidState, [LogEvent("message/\nappended")], "a type with a newline"),
            (InvalidState, [LogEvent("a/b", {"x": object()})], "a payload that is not JSON"),
            (InvalidState, [LogEvent("a/b", {1: "x"})], "a payload with an int key"),  # type: ignore[dict-item]
            (InvalidState, [LogEvent("a/b", occurred_at=math.nan)], "occurred_at NaN"),
            (InvalidState, [LogEvent("a/b", occurred_at="now")], "occurred_at a str"),  # type: ignore[arg-type]
            (InvalidState, [LogEvent("a/b", required=1)], "required an int"),  # type: ignore[arg-type]
            (InvalidState, [LogEvent("a/b", event_id="")], "an empty event_id"),
            (InvalidState, [LogEvent("a/b", run_id=5)], "run_id an int"),  # type: ignore[arg-type]
            (InvalidState, [LogEvent("a/b", schema_version=99)], "another schema_version"),
        ]
        for kind, events, what in cases:
            await _raises(kind, log.commit(writer, "x", 1, events), f"commit of {what}")
        assert await snapshot(log, "u", "s") == before, "a refused batch changed the log"
        result = await log.commit(writer, "x", 1, good)  # batch id "x" was never recorded
        assert (result.first_seq, result.duplicate) == (2, False)

    # ------------------------------------------------------------------ isolation

    async def test_user_id_is_part_of_every_lookup(self, log: SessionLog) -> None:
        alice = await log.acquire("alice", "s", "w", LONG)
        bob = await log.acquire("bob", "s", "x", LONG)  # no LeaseHeld: another user's session
        anon = await log.acquire("", "s", "y", LONG)
        await log.commit(alice, "b0", 0, batch("alice", 2))
        await log.commit(bob, "b0", 0, batch("bob", 1))  # same batch id: no conflict
        await log.commit(anon, "b0", 0, batch("anon", 3))
        for user, want in (("alice", 2), ("bob", 1), ("", 3)):
            name = user or "anon"
            assert tags(await log.read_after(user, "s", 0)) == [f"{name}.{i}" for i in range(want)]
            assert (await log.head(user, "s")).seq == want
            assert (await log.list_session_ids(user)).session_ids == ("s",)
        forged = LogWriter("bob", "s", "w", alice.epoch, alice.lease_until)
        with pytest.raises(LogFenced):
            await log.commit(forged, "b1", 1, batch("forged", 1))
        await log.seal("alice", "s", "x")
        assert not await log.is_sealed("bob", "s", "x"), "a seal crossed users"
        with pytest.raises(LeaseHeld):
            await log.acquire("bob", "s", "z", LONG)
        bob_before = await snapshot(log, "bob", "s")
        assert await log.delete("alice", "s")
        assert await snapshot(log, "bob", "s") == bob_before, "delete crossed users"
        assert (await log.list_session_ids("alice")).session_ids == ()
        assert tags(await log.read_after("", "s", 0)) == ["anon.0", "anon.1", "anon.2"]

    async def test_hostile_ids_round_trip_through_list_session_ids(self, log: SessionLog) -> None:
        for hostile in HOSTILE_IDS:  # as session id, owner and batch id
            writer = await log.acquire("u", hostile, hostile, LONG)
            await log.commit(writer, hostile, 0, [LogEvent("a/b", {"tag": hostile, "i": 0})])
        listed: list[str] = []
        cursor: str | None = ""
        while cursor is not None:
            page = await log.list_session_ids("u", limit=7, cursor=cursor)
            listed += page.session_ids
            cursor = page.next_cursor
        assert sorted(listed) == sorted(HOSTILE_IDS), "hostile session ids did not round-trip"
        for hostile in HOSTILE_IDS:
            assert tags(await log.read_after("u", hostile, 0)) == [f"{hostile}.0"], repr(hostile)
        for hostile in HOSTILE_IDS:  # as user id
            writer = await log.acquire(hostile, "s", "w", LONG)
            await log.commit(writer, "b", 0, [LogEvent("a/b", {"tag": hostile, "i": 0})])
        for hostile in HOSTILE_IDS:
            assert (await log.list_session_ids(hostile)).session_ids == ("s",), repr(hostile)
            assert tags(await log.read_after(hostile, "s", 0)) == [f"{hostile}.0"], repr(hostile)

    async def test_colliding_id_pairs_stay_apart(self, log: SessionLog) -> None:
        expected: dict[str, set[str]] = {}
        for user, session in colliding_pairs():
            writer = await log.acquire(user, session, "w", LONG)
            await log.commit(
                writer, "b", 0, [LogEvent("a/b", {"tag": f"{user}|{session}", "i": 0})]
            )
            expected.setdefault(user, set()).add(session)
        for user, session in colliding_pairs():
            got = tags(await log.read_after(user, session, 0))
            assert got == [f"{user}|{session}.0"], f"({user!r}, {session!r}) read {got}"
        for user, sessions in expected.items():
            page = await log.list_session_ids(user, limit=1000)
            assert set(page.session_ids) == sessions, f"user {user!r} lists {page.session_ids}"

    # ------------------------------------------------------------------ listing and delete

    async def test_list_session_ids_pages(self, log: SessionLog) -> None:
        names = [f"s{i}" for i in range(7)]
        for name in names:
            await written(log, "u", name, 1)
        await written(log, "other", "x", 1)
        first = await log.list_session_ids("u", limit=3)
        assert await log.list_session_ids("u", limit=3, cursor="") == first, "'' is page one"
        pages, cursor = [first], first.next_cursor
        while cursor is not None:
            pages.append(await log.list_session_ids("u", limit=3, cursor=cursor))
            cursor = pages[-1].next_cursor
        assert [len(p.session_ids) for p in pages] == [3, 3, 1], f"pages: {pages}"
        listed = [i for p in pages for i in p.session_ids]
        assert sorted(listed) == names, f"paging listed {listed}"
        again = await log.list_session_ids("u", limit=100)
        assert list(again.session_ids) == listed and again.next_cursor is None, "unstable order"
        exact = await log.list_session_ids("u", limit=7)
        assert len(exact.session_ids) == 7 and exact.next_cursor is None, f"{exact}"
        assert (await log.list_session_ids("nobody")).session_ids == ()

    async def test_a_session_without_commits_is_not_listed(self, log: SessionLog) -> None:
        await log.acquire("u", "acquired", "w", LONG)
        await log.seal("u", "sealed", "w")
        await written(log, "u", "full", 1)
        assert (await log.list_session_ids("u")).session_ids == ("full",)

    async def test_delete_removes_the_whole_log(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 2, 1)
        await written(log, "u", "kept", 1)
        await log.seal("u", "s", "old")
        kept = await snapshot(log, "u", "kept")
        assert await log.delete("u", "s") is True
        assert await log.head("u", "s") == LogHead(), "delete left a head"
        assert await log.read_after("u", "s", 0) == [], "delete left events"
        assert not await log.is_sealed("u", "s", "old"), "delete left a seal"
        with pytest.raises(LogFenced):
            await log.commit(writer, "late", 3, batch("late", 1))
        assert (await log.list_session_ids("u")).session_ids == ("kept",)
        assert await snapshot(log, "u", "kept") == kept, "delete touched another session"
        assert await log.delete("u", "s") is False, "a second delete returns False"
        assert await log.delete("u", "never") is False
        fresh = await log.acquire("u", "s", "old", LONG)
        result = await log.commit(fresh, "b0", 0, batch("new", 1))  # batch ids forgotten
        assert (result.first_seq, result.duplicate) == (1, False)
        assert tags(await log.read_after("u", "s", 0)) == ["new.0"]
