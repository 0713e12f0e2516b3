"""The Redis log's lean path (logwire.py) and its cold read's loop, on real servers: the
bytes are redis-py's, a W1 call's five scripts share one held connection, a lost or
interrupted connection is never reused, NOSCRIPT loads the script, and damaged commits
fail closed with a typed error (a record without a digest was a ValueError)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hookagent.errors import LogCorrupt
from hookagent.sessionlog import LogEvent
from hookagent_store_redis import RedisSessionLog, connect_log
from hookagent_store_redis import logscripts as ls
from hookagent_store_redis.logwire import Packed, arg
from hookagent_store_redis.lua import Script
from hookagent_store_redis.testing import delete_prefix, new_prefix


def ev(text: str) -> LogEvent:
    return LogEvent("message/appended", {"text": text}, event_id=f"e-{text}")


@pytest.fixture
async def log(held_url: str) -> AsyncIterator[RedisSessionLog]:
    prefix = new_prefix()
    opened = connect_log(held_url, prefix=prefix)
    try:
        yield opened
    finally:
        with contextlib.suppress(Exception):
            await delete_prefix(opened.client, prefix)
        await opened.aclose()


async def w1(log: RedisSessionLog, run: int, seq: int) -> int:
    w = await log.acquire("u", "s", f"run-{run}", 30)
    for k in range(4):
        seq = (await log.commit(w, f"b{run}-{k}", seq, [ev(f"{run}.{k}")], finish=k == 3)).last_seq
    return seq


@pytest.mark.anyio
async def test_the_packed_bytes_are_redis_py_s(log: RedisSessionLog) -> None:
    keys = log._keys("u", "s:é", index=True)
    args: list[Any] = ["", "3", "run-é", "b1", 0, "d" * 40, 2, 0, 1, 0, "x", b"[2,\x00\xff]"]
    packed = Packed(ls.COMMIT, keys, [])
    conn = log.client.connection_pool.make_connection()
    want = conn.pack_command("EVALSHA", ls.COMMIT.sha, len(keys), *keys, *args)
    assert b"".join(packed.command([arg(a) for a in args])) == b"".join(want)
    want = conn.pack_command("EVAL", ls.COMMIT.source, len(keys), *keys, *args)
    assert b"".join(packed.command([arg(a) for a in args], source=True)) == b"".join(want)


@pytest.mark.anyio
async def test_a_w1_call_s_scripts_share_one_held_connection(log: RedisSessionLog) -> None:
    pool = log.client.connection_pool
    taken: list[Any] = []
    real = pool.get_connection

    async def counting(*a: Any, **kw: Any) -> Any:
        taken.append(1)
        return await real(*a, **kw)

    pool.get_connection = counting
    try:
        seq = await w1(log, 1, 0)
        seq = await w1(log, 2, seq)
    finally:
        del pool.get_connection
    assert seq == 8 and len(taken) == 1  # ten scripts, one connection taken from the pool
    assert [e.payload["text"] for e in await log.read_after("u", "s", 6)] == ["2.2", "2.3"]


@pytest.mark.anyio
async def test_a_killed_connection_is_replaced_and_the_commit_resent(
    log: RedisSessionLog,
) -> None:
    seq = await w1(log, 1, 0)
    wire = log._wire
    assert wire is not None and len(wire.idle) == 1
    held = wire.idle[0]
    client_id = await wire.call([b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"])
    await log.client.execute_command("CLIENT", "KILL", "ID", client_id)
    seq = await w1(log, 2, seq)  # the first script finds the socket closed: re-sent once
    assert seq == 8 and (await log.head("u", "s")).seq == 8
    assert len(wire.idle) == 1 and wire.idle[0] is held  # reconnected (redis-py's connect)
    assert int(await wire.call([b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"])) != int(client_id)


@pytest.mark.anyio
async def test_a_command_interrupted_mid_reply_drops_its_connection(
    log: RedisSessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    seq = await w1(log, 1, 0)
    wire = log._wire
    assert wire is not None
    held = wire.idle[0]
    client_id = await wire.call([b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"])

    async def cut(*a: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt  # a BaseException after the command was sent

    monkeypatch.setattr(held, "read_response", cut)
    with pytest.raises(KeyboardInterrupt):
        await log.acquire("u", "s", "run-2", 30)
    assert wire.idle == [] and not held.is_connected  # its reply is unread: never reused
    monkeypatch.undo()
    assert (await log.head("u", "s")).owner == "run-2"  # the script ran; its answer was cut
    w = await log.acquire("u", "s", "run-2", 30)  # on a new connection
    assert (await log.commit(w, "b2", seq, [ev("2")])).last_seq == seq + 1
    again = await wire.call([b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"])
    assert len(wire.idle) == 1 and int(again) != int(client_id)  # another socket


@pytest.mark.anyio
async def test_noscript_loads_the_script_by_eval(log: RedisSessionLog) -> None:
    wire = log._wire
    assert wire is not None
    script = Script(f"-- {uuid.uuid4().hex}\nreturn {{KEYS[1], ARGV[1]}}")
    got = await wire.run(Packed(script, ["k"], []), [arg("v")])
    assert got == [b"k", b"v"]
    assert await wire.run(Packed(script, ["k"], []), [arg(7)]) == [b"k", b"7"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "damage",
    ["no record", "no bytes", "record without a digest", "other digest", "last not digits"],
)
async def test_the_cold_read_fails_closed_on_a_damaged_commit(
    log: RedisSessionLog, damage: str
) -> None:
    seq = await w1(log, 1, 0)
    assert seq == 4
    _, _, blobs, records, *_ = log._keys("u", "s")
    record = (await log.client.hget(records, "2")).decode()
    last, digest, bid = record.split(" ", 2)
    if damage == "no record":
        await log.client.hdel(records, "2")
    elif damage == "no bytes":
        await log.client.hdel(blobs, "2")
    elif damage == "record without a digest":
        await log.client.hset(records, "2", last)
    elif damage == "other digest":
        await log.client.hset(records, "2", f"{last} {'0' * 40} {bid}")
    else:
        await log.client.hset(records, "2", f"x{last} {digest} {bid}")
    with pytest.raises(LogCorrupt, match=r"commit|record"):
        await log.read_rows_after("u", "s", 0)
    with pytest.raises(LogCorrupt):  # the envelope read agrees
        await log.read_after("u", "s", 0)
    assert [r[0] for r in await log.read_rows_after("u", "s", 2)] == [3, 4]
