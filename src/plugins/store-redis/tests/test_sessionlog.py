"""The Redis session log on real servers: the same answers as the in-memory reference (a
shared fake clock makes them byte-equal, errors included), server-clock leases, orphans,
damage, round trips, the key layout and the registration."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hookagent.errors import (
    BatchConflict,
    InvalidIdentifier,
    InvalidStoreArgument,
    LeaseHeld,
    LogCorrupt,
    LogFenced,
    OwnerSealed,
    StalePrefix,
    StoreConfigurationError,
    StoreUnavailable,
)
from hookagent.sessionlog import (
    InMemorySessionLog,
    LogEvent,
    LogWriter,
    open_session_log,
)
from hookagent.store.ids import encode_id
from hookagent_store_redis import RedisSessionLog, connect_log
from hookagent_store_redis import logscripts as ls
from hookagent_store_redis.testing import (
    STANDALONE,
    delete_prefix,
    new_prefix,
    plant_log_head,
    plant_log_orphan,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def ev(text: str, kind: str = "message/appended") -> LogEvent:
    return LogEvent(kind, {"text": text}, event_id=f"e-{text}")


@contextlib.asynccontextmanager
async def open_log(url: str, **options: Any) -> AsyncIterator[RedisSessionLog]:
    prefix = new_prefix()
    log = connect_log(url, prefix=prefix, **options)
    try:
        yield log
    finally:
        with contextlib.suppress(Exception):
            await delete_prefix(log.client, prefix)
        await log.aclose()


@pytest.fixture(params=["standalone", "cluster", "sentinel"])
def topology_url(request: pytest.FixtureRequest) -> str:
    if request.param == "standalone":
        return STANDALONE
    return str(request.getfixturevalue(f"redis_{request.param}").url)


@pytest.fixture
async def log(topology_url: str) -> AsyncIterator[RedisSessionLog]:
    async with open_log(topology_url) as opened:
        yield opened


async def outcome(log: Any, method: str, *args: Any, **kw: Any) -> tuple[str, Any]:
    try:
        return "ok", await getattr(log, method)(*args, **kw)
    except Exception as exc:  # compared by type and message with the reference
        return type(exc).__name__, str(exc)


@pytest.mark.anyio
@pytest.mark.parametrize("seed", [1, 2])
async def test_random_operations_answer_as_the_reference(topology_url: str, seed: int) -> None:
    """400 random operations (two sessions, three owners, stale writers, retries, finishes,
    seals, releases, reads with limits, deletes) on Redis and on InMemorySessionLog with
    one fake clock: every answer and every error message equal."""
    clock = FakeClock()
    ref = InMemorySessionLog(clock=clock)
    async with open_log(topology_url, clock=clock) as log:
        rnd = random.Random(seed)
        writers: list[LogWriter] = []
        batches: dict[str, list[LogEvent]] = {}
        seen: set[str] = set()
        for step in range(400):
            sid = rnd.choice(["s1", "s2"])
            owner = rnd.choice("abcdefgh")
            op = rnd.random()
            if op < 0.15:
                lease = rnd.choice([1.0, 5.0, 30.0])
                got = [await outcome(h, "acquire", "u", sid, owner, lease) for h in (log, ref)]
                if got[0][0] == "ok":
                    writers.append(got[0][1])
            elif op < 0.55 and writers:
                w = rnd.choice(writers)
                if rnd.random() < 0.3 and batches:  # a retry, same or other content
                    bid = rnd.choice(sorted(batches))
                    events = batches[bid] if rnd.random() < 0.7 else [ev(f"other-{step}")]
                else:
                    bid = f"b{step}"
                    kind = "state/checkpoint" if rnd.random() < 0.2 else "message/appended"
                    events = [ev(f"{step}-{i}", kind) for i in range(rnd.randint(1, 3))]
                    batches[bid] = events
                head = (await ref.head(w.user_id, w.session_id)).seq
                expected = head if rnd.random() < 0.85 else head + rnd.choice([-1, 1])
                finish = rnd.random() < 0.05
                got = [
                    await outcome(h, "commit", w, bid, expected, events, finish=finish)
                    for h in (log, ref)
                ]
            elif op < 0.65 and writers:
                w = rnd.choice(writers)
                got = [await outcome(h, "renew", w, 10.0) for h in (log, ref)]
            elif op < 0.7 and writers:
                w = rnd.choice(writers)
                got = [await outcome(h, "release", w) for h in (log, ref)]
            elif op < 0.72:
                got = [await outcome(h, "seal", "u", sid, owner) for h in (log, ref)]
            elif op < 0.76:
                got = [await outcome(h, "is_sealed", "u", sid, owner) for h in (log, ref)]
            elif op < 0.9:
                after, limit = rnd.randint(0, 12), rnd.choice([None, 1, 2, 5])
                got = [await outcome(h, "read_after", "u", sid, after, limit) for h in (log, ref)]
            elif op < 0.92:
                got = [await outcome(h, "delete", "u", sid) for h in (log, ref)]
            else:
                clock.now += rnd.choice([0.5, 2.0, 20.0])  # leases run out
                got = [await outcome(h, "list_session_ids", "u") for h in (log, ref)]
            assert got[0] == got[1], (step, got)
            seen.add(got[1][0])
            if got[1][0] == "ok" and getattr(got[1][1], "duplicate", False):
                seen.add("duplicate")
            for h in ("s1", "s2"):
                assert await log.head("u", h) == await ref.head("u", h), step
        kinds = {"LeaseHeld", "LogFenced", "StalePrefix", "BatchConflict", "OwnerSealed"}
        assert kinds | {"ok", "duplicate"} <= seen, seen


@pytest.mark.anyio
async def test_leases_run_on_the_server_clock(log: RedisSessionLog) -> None:
    w = await log.acquire("u", "s", "a", 0.3)
    with pytest.raises(LeaseHeld, match="held by 'a'"):
        await log.acquire("u", "s", "b", 5)
    await log.commit(w, "b1", 0, [ev("1")])
    import anyio

    await anyio.sleep(0.4)
    with pytest.raises(LogFenced, match="its lease expired"):
        await log.commit(w, "b2", 1, [ev("2")])
    with pytest.raises(LogFenced):
        await log.renew(w, 5)
    b = await log.acquire("u", "s", "b", 5)
    assert b.epoch == 2 and b.seq == 1
    with pytest.raises(LogFenced, match="epoch 2 held by 'b'"):
        await log.commit(w, "b2", 1, [ev("2")])
    assert not await log.release(w)
    renewed = await log.renew(b, 60)
    assert renewed.lease_until > b.lease_until and renewed.epoch == 2
    assert (await log.head("u", "s")).lease_until == renewed.lease_until
    assert await log.release(renewed)
    head = await log.head("u", "s")
    assert head.owner is None and head.lease_until == 0.0 and head.seq == 1


@pytest.mark.anyio
async def test_an_orphan_is_invisible_not_a_prior_and_overwritten(log: RedisSessionLog) -> None:
    w = await log.acquire("u", "s", "a", 30)
    await log.commit(w, "b1", 0, [ev("1"), ev("2")])
    await plant_log_orphan(log, "u", "s", "lost", [ev("orphan-3"), ev("orphan-4")])
    await plant_log_orphan(log, "u", "s", "lost2", [ev("orphan-3b")])
    assert [e.payload["text"] for e in await log.read_after("u", "s", 0)] == ["1", "2"]
    assert await log.read_after("u", "s", 2) == []
    assert (await log.head("u", "s")).seq == 2
    # the orphan's batch id is not a prior: other content under it commits, at seq 3
    got = await log.commit(w, "lost", 2, [ev("3")])
    assert (got.first_seq, got.last_seq, got.duplicate) == (3, 3, False)
    again = await log.commit(w, "lost", 2, [ev("3")])
    assert again.duplicate and again.first_seq == 3
    with pytest.raises(BatchConflict):
        await log.commit(w, "lost", 3, [ev("3 changed")])
    await log.commit(w, "lost2", 3, [ev("4")])
    events = await log.read_after("u", "s", 0)
    assert [(e.seq, e.payload["text"]) for e in events] == [(1, "1"), (2, "2"), (3, "3"), (4, "4")]
    records = log.layout.session("u", "s").log_keys()[3]
    assert sorted(int(f) for f in await log.client.hkeys(records)) == [1, 3, 4]


@pytest.mark.anyio
async def test_a_head_past_its_commits_fails_closed(log: RedisSessionLog) -> None:
    w = await log.acquire("u", "s", "a", 30)
    await log.commit(w, "b1", 0, [ev("1")])
    await plant_log_head(log, "u", "s", 3)
    with pytest.raises(LogCorrupt, match="head is at seq 3 but its commit is missing"):
        await log.read_after("u", "s", 0)
    with pytest.raises(LogCorrupt):
        await log.read_after("u", "s", 1)
    assert [e.seq for e in await log.read_after("u", "s", 0, limit=1)] == [1]
    await plant_log_head(log, "u", "t", 2)
    with pytest.raises(LogCorrupt):
        await log.read_after("u", "t", 0)


@pytest.mark.anyio
async def test_damage_is_log_corrupt_and_writes_nothing(log: RedisSessionLog) -> None:
    w = await log.acquire("u", "s", "a", 30)
    await log.commit(w, "b1", 0, [ev("1")])
    await log.commit(w, "b2", 1, [ev("2"), ev("3")])
    head, seqs, blobs, records, batches, sealed = log.layout.session("u", "s").log_keys()
    await log.client.hset(blobs, "2", b'[{"id":"x","t":"message/appended","at":0}]')
    with pytest.raises(LogCorrupt, match="seq 2 does not match its record"):
        await log.read_after("u", "s", 0)
    await log.client.hdel(blobs, "2")
    with pytest.raises(LogCorrupt, match="commit at seq 2 is missing"):
        await log.read_after("u", "s", 1)
    await log.client.hset(head, "s", "3x")
    before = {k: await log.client.dump(k) for k in (head, seqs, records, batches)}
    for call in (
        lambda: log.head("u", "s"),
        lambda: log.commit(w, "b3", 3, [ev("4")]),
        lambda: log.acquire("u", "s", "b", 5),
        lambda: log.renew(w, 5),
        lambda: log.release(w),
        lambda: log.seal("u", "s", "a"),
        lambda: log.read_after("u", "s", 0),
    ):
        with pytest.raises(LogCorrupt, match="session_id='s'"):
            await call()
    assert {k: await log.client.dump(k) for k in before} == before
    assert not await log.client.exists(sealed)
    await log.client.delete(head)
    await log.client.set(head, "not a hash")
    with pytest.raises(LogCorrupt, match="wrong type"):
        await log.commit(w, "b3", 3, [ev("4")])


@pytest.mark.anyio
async def test_round_trips_and_reads_in_proportion(log: RedisSessionLog) -> None:
    w = await log.acquire("u", "s", "a", 60)
    for i in range(300):
        await log.commit(w, f"b{i}", i, [ev(str(i))])
    assert len(await log.read_rows_after("u", "s", 299)) == 1  # every script cached
    sent: list[str] = []
    real = log.client.execute_command

    async def counting(*args: Any, **kw: Any) -> Any:
        sent.append(str(args[0]))
        return await real(*args, **kw)

    wire = log._wire  # standalone and Sentinel: the log's scripts go on its held connections
    if wire is not None:
        wire_call = wire.call

        async def wire_counting(buffers: list[bytes]) -> Any:
            sent.append(buffers[1].split(b"\r\n")[1].decode())
            return await wire_call(buffers)

        wire.call = wire_counting  # type: ignore[method-assign]
    log.client.execute_command = counting
    try:
        await log.commit(w, "b300", 300, [ev("300")])
        assert sent == ["EVALSHA"]
        sent.clear()
        assert (await log.head("u", "s")).seq == 301
        assert sent == ["HMGET"]
        sent.clear()
        assert len(await log.read_after("u", "s", 291)) == 10
        assert sent == ["EVALSHA"]
        sent.clear()
        assert len(await log.read_rows_after("u", "s", 291)) == 10
        assert sent == ["EVALSHA"]
    finally:
        del log.client.execute_command
        if wire is not None:
            del wire.call
    keys = log.layout.session("u", "s").log_keys()[:4]
    res = await ls.READ.run(log.client, keys, [291, -1])
    assert int(res[7]) == 10  # ten commits fetched of 301, not the whole log
    res = await ls.READ.run(log.client, keys, [0, 3])
    assert int(res[7]) == 3


@pytest.mark.anyio
async def test_keys_share_one_slot_and_name_the_user(topology_url: str) -> None:
    hostile = ["{x}", "a:b", "*", "?[", "é\u2028", ""]
    async with open_log(topology_url) as log:
        for user in hostile:
            w = await log.acquire(user, "{s}:*", "o", 30)
            await log.commit(w, "b", 0, [ev(user or "empty")], finish=True)
            keys = log.layout.session(user, "{s}:*").log_keys()
            assert all(f"{{{encode_id(user)}:{encode_id('{s}:*')}}}" in k for k in keys)
            assert all(k.startswith(log.prefix + ":") for k in keys)
            if "cluster" in topology_url:
                slots = {await log.client.cluster_keyslot(k) for k in keys}
                assert len(slots) == 1
            assert (await log.list_session_ids(user)).session_ids == ("{s}:*",)
        assert [e.payload["text"] for e in await log.read_after("*", "{s}:*", 0)] == ["*"]
        assert await log.read_after("{x}", "other", 0) == []


@pytest.mark.anyio
async def test_listing_pages_and_delete(log: RedisSessionLog) -> None:
    for sid in ["c", "a", "b", "empty"]:
        w = await log.acquire("u", sid, "o", 30)
        if sid != "empty":
            await log.commit(w, "b", 0, [ev(sid)])
    page = await log.list_session_ids("u", limit=2)
    assert page.session_ids == ("a", "b") and page.next_cursor == "b"
    rest = await log.list_session_ids("u", limit=2, cursor=page.next_cursor)
    assert rest.session_ids == ("c",) and rest.next_cursor is None
    assert (await log.list_session_ids("other")).session_ids == ()
    assert await log.delete("u", "b") and not await log.delete("u", "never")
    assert (await log.list_session_ids("u")).session_ids == ("a", "c")
    assert await log.head("u", "b") == await InMemorySessionLog().head("u", "b")


@pytest.mark.anyio
async def test_bad_arguments_are_typed_before_any_round_trip() -> None:
    log = connect_log("redis://127.0.0.1:1/0")  # nothing listens: a round trip would fail
    w = LogWriter("u", "s", "o", 1, 0.0)
    with pytest.raises(InvalidIdentifier):
        await log.acquire("u", "", "o", 5)
    with pytest.raises(InvalidStoreArgument):
        await log.acquire("u", "s", "o", 0)
    with pytest.raises(InvalidStoreArgument):
        await log.commit(w, "", 0, [ev("x")])
    with pytest.raises(InvalidStoreArgument):
        await log.commit(LogWriter("u", "s", "o", 0, 0.0), "b", 0, [ev("x")])
    with pytest.raises(InvalidStoreArgument):
        await log.read_after("u", "s", -1)
    with pytest.raises(StoreUnavailable):
        await log.head("u", "s")
    await log.aclose()


@pytest.mark.anyio
async def test_registered_for_every_scheme() -> None:
    for url in (
        f"{STANDALONE}?prefix={new_prefix()}",
        "rediss://127.0.0.1:6379/0",
        "redis+cluster://127.0.0.1:7000/",
        "redis+sentinel://127.0.0.1:26379/mymaster/0",
    ):
        log = await open_session_log(url)
        assert isinstance(log, RedisSessionLog) and log.locality == "shared"
        await log.aclose()
    for bad in ("?ttl=5", "?cache_slots=3", "?nope=1"):
        with pytest.raises(StoreConfigurationError, match="option"):
            await open_session_log(STANDALONE + bad)
    with pytest.raises(StoreConfigurationError, match="replicas"):
        await open_session_log("redis+cluster://127.0.0.1:7000/?replicas=1")


@pytest.mark.anyio
async def test_sealed_owners_and_finish(log: RedisSessionLog) -> None:
    w = await log.acquire("u", "s", "run-1", 30)
    done = await log.commit(w, "last", 0, [ev("1")], finish=True)
    assert done.head.owner is None and done.head.lease_until == 0.0
    assert await log.is_sealed("u", "s", "run-1") and not await log.is_sealed("u", "s", "x")
    with pytest.raises(OwnerSealed):
        await log.acquire("u", "s", "run-1", 30)
    with pytest.raises(LogFenced):
        await log.commit(w, "more", 1, [ev("2")])
    assert (await log.commit(w, "last", 0, [ev("1")], finish=True)).duplicate
    other = await log.acquire("u", "s", "run-2", 30)
    with pytest.raises(StalePrefix) as info:
        await log.commit(other, "b", 0, [ev("2")])
    assert (info.value.expected, info.value.actual) == (0, 1)
    await log.seal("u", "s", "run-2")
    with pytest.raises(LogFenced):
        await log.commit(other, "b", 1, [ev("2")])


@pytest.mark.anyio
async def test_replicated_commits_are_acknowledged_only_on_the_replicas(
    redis_sentinel: Any,
) -> None:
    import redis as sync_redis

    async with open_log(redis_sentinel.url, replicas=1, replica_timeout=5) as log:
        w = await log.acquire("u", "s", "a", 30)
        assert (await log.commit(w, "b1", 0, [ev("1")])).head.seq == 1
        primary = redis_sentinel.primary_port()
        replica = next(p for p in redis_sentinel.data_ports if p != primary)
        head = log.layout.session("u", "s").log_keys()[0]
        with sync_redis.Redis("127.0.0.1", replica) as r:
            assert r.hget(head, "s") == b"1"  # on the replica when acknowledged
        assert (await log.commit(w, "b1", 0, [ev("1")])).duplicate  # a retry, confirmed
    async with open_log(STANDALONE, replicas=1, replica_timeout=0.2) as log:  # no replica
        w = await log.acquire("u", "s", "a", 30)
        for _ in range(2):  # the retry answers duplicate, still not on a replica
            with pytest.raises(StoreUnavailable, match="reached 0 of 1 replicas"):
                await log.commit(w, "b1", 0, [ev("1")])
        assert (await log.head("u", "s")).seq == 1  # applied on the primary, once


@pytest.mark.anyio
async def test_a_session_s_keys_are_made_once_per_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21: a W1 call's five operations (an acquire, four commits) reuse the keys made
    for the session's first one; the keys are the layout's, whatever the ids."""
    async with open_log(STANDALONE) as log:
        made: list[tuple[str, str]] = []
        real = log.layout.session

        def counting(user_id: str, session_id: str) -> Any:
            made.append((user_id, session_id))
            return real(user_id, session_id)

        monkeypatch.setattr(log, "layout", _Spy(log.layout, counting))
        w = await log.acquire("u", "s:1", "run-1", 30)
        for seq in range(4):
            await log.commit(w, f"b{seq}", seq, [ev(f"m{seq}")], finish=seq == 3)
        head = await log.head("u", "s:1")
        assert head.seq == 4 and head.owner is None
        assert made.count(("u", "s:1")) == 2  # one for the plain keys, one with the index
        assert log._keys("u", "s:1") == real("u", "s:1").log_keys()
        assert [e.payload["text"] for e in await log.read_after("u", "s:1", 0)] == [
            "m0", "m1", "m2", "m3"
        ]  # fmt: skip


class _Spy:
    def __init__(self, layout: Any, session: Any) -> None:
        self._layout, self.session = layout, session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._layout, name)
