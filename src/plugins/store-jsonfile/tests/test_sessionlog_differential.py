"""Randomised differential test: both file session logs against ``InMemorySessionLog``.

Seeded sequences of acquires (by several owners, with a shared clock that moves past
leases), renews, releases, seals, commits (right and stale expected seqs, retried and
conflicting batch ids, ``finish``), planted orphans, reads at random seqs and limits, heads,
listings and deletes; after every step both logs must agree on the result or the error type.
A second handle (another process, for the local log) serves half of the calls.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hookagent.errors import SessionStoreError
from hookagent.sessionlog import InMemorySessionLog, LogEvent, LogWriter
from hookagent_store_jsonfile import FsspecJsonFileSessionLog, JsonFileSessionLog

pytestmark = pytest.mark.anyio
USERS, SESSIONS, OWNERS = ["a", "", "a/../b"], ["s1", "s 2"], ["r1", "r2", "r3"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def local(tmp: Path, clock: Clock) -> Any:
    return JsonFileSessionLog(tmp / "root", cache_slots=2, clock=clock)


def local_uncached(tmp: Path, clock: Clock) -> Any:
    return JsonFileSessionLog(tmp / "root", cache_slots=0, clock=clock)


def memory_single(tmp: Path, clock: Clock) -> Any:
    return FsspecJsonFileSessionLog(f"memory://logdiff-{uuid.uuid4().hex}", clock=clock)


def local_fsspec_multi(tmp: Path, clock: Clock) -> Any:
    fs = fsspec.filesystem("file")
    return FsspecJsonFileSessionLog(str(tmp / "fs"), writers="multi", fs=fs, clock=clock)


async def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", await call
    except SessionStoreError as exc:
        return type(exc).__name__, None


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    return a[0] == b[0] and a[1] == b[1]


@pytest.mark.parametrize("make", [local, local_uncached, memory_single, local_fsspec_multi])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_matches_the_in_memory_reference(
    make: Callable[[Path, Clock], Any], seed: int, tmp_path: Path
) -> None:
    """Seed 4 uses one session only: the two handles interleave on it all the time."""
    rng = random.Random(seed)
    users, sessions = (USERS[:1], SESSIONS[:1]) if seed == 4 else (USERS, SESSIONS)
    clock = Clock()
    ref, log = InMemorySessionLog(clock=clock), make(tmp_path, clock)
    other = log.another_handle()
    writers: dict[tuple[str, str], list[LogWriter]] = {}
    sent: dict[tuple[str, str], list[tuple[str, int, list[LogEvent]]]] = {}
    counts: dict[str, int] = {}
    for step in range(300):
        u, s = rng.choice(users), rng.choice(sessions)
        ck = (u, s)
        b = rng.choice([log, other])
        op = rng.choice(
            ["acquire", "commit", "commit", "commit", "retry", "read", "read", "renew",
             "release", "seal", "head", "list", "delete", "orphan", "tick"]
        )  # fmt: skip
        counts[op] = counts.get(op, 0) + 1
        if op == "tick":
            clock.t += rng.choice([1.0, 20.0, 61.0])
            continue
        if op == "acquire":
            owner = rng.choice(OWNERS)
            ra = await outcome(ref.acquire(u, s, owner, 60))
            rb = await outcome(b.acquire(u, s, owner, 60))
            assert same(ra, rb), (step, op, ra, rb)
            if ra[0] == "ok":
                writers.setdefault(ck, []).append(ra[1])
        elif op in ("commit", "retry", "renew", "release") and writers.get(ck):
            w = rng.choice(writers[ck])
            if op == "renew":
                ra, rb = await outcome(ref.renew(w, 60)), await outcome(b.renew(w, 60))
            elif op == "release":
                ra, rb = await outcome(ref.release(w)), await outcome(b.release(w))
            elif op == "retry" and sent.get(ck):
                batch_id, expected, events = rng.choice(sent[ck])
                if rng.random() < 0.3:  # the same batch_id with other content
                    events = [LogEvent("acme/other", {"n": step})]
                ra = await outcome(ref.commit(w, batch_id, expected, events))
                rb = await outcome(b.commit(w, batch_id, expected, events))
            else:
                head = (await ref.head(u, s)).seq
                expected = head if rng.random() < 0.85 else max(0, head - 1)
                kind = rng.choice(["message/appended", "state/checkpoint", "tool/called"])
                events = [LogEvent(kind, {"step": step, "i": i}) for i in range(rng.randint(1, 4))]
                batch_id, finish = f"b{step}", rng.random() < 0.1
                ra = await outcome(ref.commit(w, batch_id, expected, events, finish=finish))
                rb = await outcome(b.commit(w, batch_id, expected, events, finish=finish))
                sent.setdefault(ck, []).append((batch_id, expected, events))
            assert same(ra, rb), (step, op, ra, rb)
        elif op == "read":
            head = (await ref.head(u, s)).seq
            seq = rng.randint(0, head + 1)
            limit = rng.choice([None, 1, 2, 5])
            ra = await outcome(ref.read_after(u, s, seq, limit))
            rb = await outcome(b.read_after(u, s, seq, limit))
            assert same(ra, rb), (step, op, seq, limit, ra, rb)
        elif op == "seal":
            owner = rng.choice(OWNERS)
            await ref.seal(u, s, owner)
            await b.seal(u, s, owner)
            assert await ref.is_sealed(u, s, owner) == await b.is_sealed(u, s, owner)
        elif op == "head":
            assert await ref.head(u, s) == await b.head(u, s)
        elif op == "list":
            assert await ref.list_session_ids(u) == await b.list_session_ids(u)
        elif op == "delete":
            assert await ref.delete(u, s) == await b.delete(u, s)
            writers.pop(ck, None)
            sent.pop(ck, None)
        elif op == "orphan" and (await ref.head(u, s)).epoch:
            events = [LogEvent("message/appended", {"orphan": step})]
            ref.plant_orphan(u, s, f"b{step}", events)
            b.plant_orphan(u, s, f"b{step}", events)
        for uu in USERS:
            for ss in SESSIONS:
                assert await ref.head(uu, ss) == await log.head(uu, ss), step
    for uu in USERS:
        for ss in SESSIONS:
            assert await ref.read_after(uu, ss, 0) == await log.read_after(uu, ss, 0)
    assert counts["commit"] > 40, counts
    await log.aclose()
    await other.aclose()
