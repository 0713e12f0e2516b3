"""Test harness: real Redis servers (cluster, sentinel) as subprocesses, and key clean-up.

Used by this distribution's tests and benchmarks; nothing here is imported by the store.
Servers run in a caller-given directory on free loopback ports and stop when the context
manager exits.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import redis
from redis.cluster import RedisCluster

STANDALONE = "redis://127.0.0.1:6379/0"
HOST = "127.0.0.1"


def new_prefix() -> str:
    return f"hkt-{uuid.uuid4().hex[:12]}"


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port(*, bus: bool = False) -> int:
    """A free loopback port (and port + 10000 free too, for a cluster bus)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind((HOST, 0))
            port = int(s.getsockname()[1])
        if port + 10000 < 65536 and (not bus or _port_free(port + 10000)):
            return port
    raise RuntimeError("no free port pair")


def _wait(check: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:
            last = exc
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what} (last error: {last!r})")


@attrs.define
class Servers:
    procs: list[subprocess.Popen[bytes]] = attrs.Factory(list)

    def start(self, args: list[str], cwd: Path, log: str) -> None:
        out = (cwd / log).open("wb")
        self.procs.append(subprocess.Popen(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT))

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _server(port: int, d: Path, *extra: str) -> list[str]:
    return [
        "redis-server", "--port", str(port), "--bind", HOST, "--dir", str(d), "--save", "",
        "--appendonly", "no", "--daemonize", "no", *extra,
    ]  # fmt: skip


def _ping(port: int) -> bool:
    with redis.Redis(HOST, port, socket_timeout=1) as r:
        return bool(r.ping())


# ---------------------------------------------------------------------------------- cluster


@attrs.frozen
class ClusterInfo:
    ports: tuple[int, ...]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{HOST}:{p}" for p in self.ports) + "/"

    def all_keys(self) -> list[bytes]:
        keys: list[bytes] = []
        for p in self.ports:
            with redis.Redis(HOST, p) as r:
                keys += list(r.scan_iter(count=1000))
        return keys


@contextlib.contextmanager
def run_cluster(d: Path) -> Iterator[ClusterInfo]:
    """Three masters on free loopback ports, cluster created and ok; stopped at exit."""
    servers = Servers()
    ports = tuple(free_port(bus=True) for _ in range(3))
    try:
        for p in ports:
            servers.start(
                _server(p, d, "--cluster-enabled", "yes", "--cluster-config-file",
                        str(d / f"nodes-{p}.conf"), "--cluster-node-timeout", "3000"),
                d, f"redis-{p}.log",
            )  # fmt: skip
        for p in ports:
            _wait(lambda p=p: _ping(p), f"cluster node {p}")
        subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"{HOST}:{p}" for p in ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip

        def ok() -> bool:
            for p in ports:
                with redis.Redis(HOST, p) as r:
                    if r.cluster("info")["cluster_state"] != "ok":
                        return False
            with RedisCluster(HOST, ports[0]) as rc:
                return bool(rc.set("hkt-probe", "1") and rc.delete("hkt-probe"))

        _wait(ok, "cluster_state:ok", 60)
        yield ClusterInfo(ports)
    finally:
        servers.stop()


# ---------------------------------------------------------------------------------- sentinel


@attrs.frozen
class SentinelInfo:
    data_ports: tuple[int, int]
    sentinel_ports: tuple[int, int, int]
    service: str = "mymaster"

    @property
    def url(self) -> str:
        hosts = ",".join(f"{HOST}:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{self.service}/0"

    def primary_port(self) -> int:
        with redis.Redis(HOST, self.sentinel_ports[0], decode_responses=True) as s:
            return int(s.sentinel_get_master_addr_by_name(self.service)[1])

    def all_keys(self) -> list[bytes]:
        with redis.Redis(HOST, self.primary_port()) as r:
            return list(r.scan_iter(count=1000))

    def wait_stable(self, timeout: float = 30.0) -> None:
        """Until all sentinels agree on the primary and the other node replicates from it."""

        def stable() -> bool:
            addrs = set()
            for sp in self.sentinel_ports:
                with redis.Redis(HOST, sp, decode_responses=True) as s:
                    addrs.add(tuple(s.sentinel_get_master_addr_by_name(self.service)))
            if len(addrs) != 1:
                return False
            primary = int(next(iter(addrs))[1])
            other = next(p for p in self.data_ports if p != primary)
            with redis.Redis(HOST, other, decode_responses=True) as r:
                info = r.info("replication")
                return bool(
                    info["role"] == "slave"
                    and info["master_link_status"] == "up"
                    and int(info["master_port"]) == primary
                )

        _wait(stable, "a stable sentinel topology", timeout)

    def failover(self, timeout: float = 30.0) -> int:
        """Force a failover (retried on NOGOODSLAVE/INPROG); the new primary's port."""
        before, after = self.switch(timeout)
        self.demote(before, after)
        return after

    def switch(self, timeout: float = 30.0) -> tuple[int, int]:
        """Force a failover and wait until the sentinels name the new primary; (old, new).

        The old primary still accepts writes until ``demote``: clients connected to it keep
        writing there, as they do in production until sentinel's next INFO poll demotes it.
        """
        before = self.primary_port()

        def forced() -> bool:
            with redis.Redis(HOST, self.sentinel_ports[0]) as s:
                s.execute_command("SENTINEL", "FAILOVER", self.service)
            return True

        _wait(forced, "SENTINEL FAILOVER to be accepted", timeout)
        _wait(lambda: self.primary_port() != before, "the failover", timeout)
        after = self.primary_port()

        def agreed() -> bool:  # a client that reconnects now must find the new primary
            for sp in self.sentinel_ports:
                with redis.Redis(HOST, sp, decode_responses=True) as s:
                    if int(s.sentinel_get_master_addr_by_name(self.service)[1]) != after:
                        return False
            return True

        _wait(agreed, "every sentinel to name the new primary", timeout)
        return before, after

    def demote(self, before: int, after: int) -> None:
        """Turn the old primary into the new one's replica, exactly as sentinel will.

        Sentinel does it only after its next INFO poll (up to ~10 s); doing it now keeps CI
        short. The resync erases what the old primary acknowledged since the switch.
        """
        with redis.Redis(HOST, before) as old:
            old.execute_command("REPLICAOF", HOST, str(after))

    def pause_writes(self, port: int, ms: int) -> None:
        """``CLIENT PAUSE ms WRITE`` on one data node (``unpause`` ends it early)."""
        with redis.Redis(HOST, port) as r:
            r.execute_command("CLIENT", "PAUSE", str(ms), "WRITE")

    def unpause(self, port: int) -> None:
        with redis.Redis(HOST, port) as r:
            r.execute_command("CLIENT", "UNPAUSE")

    def kill_clients(self, port: int, name: str) -> int:
        """Close the connections named ``name`` on one data node (they reconnect elsewhere)."""
        with redis.Redis(HOST, port, decode_responses=True) as r:
            ids = [c["id"] for c in r.client_list() if c.get("name") == name]
            for i in ids:
                r.execute_command("CLIENT", "KILL", "ID", i)
        return len(ids)


@contextlib.contextmanager
def run_sentinel(d: Path) -> Iterator[SentinelInfo]:
    """One primary, one replica, three sentinels on loopback; stopped at exit."""
    servers = Servers()
    primary, replica = free_port(), free_port()
    sentinels = (free_port(), free_port(), free_port())
    try:
        servers.start(_server(primary, d), d, f"redis-{primary}.log")
        servers.start(
            _server(replica, d, "--replicaof", HOST, str(primary)), d, f"redis-{replica}.log"
        )
        for p in (primary, replica):
            _wait(lambda p=p: _ping(p), f"redis {p}")
        for sp in sentinels:
            conf = d / f"sentinel-{sp}.conf"
            conf.write_text(
                f"port {sp}\nbind {HOST}\ndir {d}\n"
                f"sentinel monitor mymaster {HOST} {primary} 2\n"
                "sentinel down-after-milliseconds mymaster 1000\n"
                "sentinel failover-timeout mymaster 3000\n"
                "sentinel parallel-syncs mymaster 1\n"
            )
            servers.start(["redis-server", str(conf), "--sentinel"], d, f"sentinel-{sp}.log")
        info = SentinelInfo((primary, replica), sentinels)
        info.wait_stable(60)
        yield info
    finally:
        servers.stop()


# ---------------------------------------------------------------------------------- helpers


async def plant_slot(
    store: Any,
    user_id: str,
    session_id: str,
    key: str,
    head: bytes,
    messages: list[bytes],
    version: int,
) -> None:
    """Write a slot's raw keys as a save at ``version`` would, behind the store's back
    (bytes copied from another slot, or written by another hookagent): a head whose chain,
    count and lineage ring match ``messages``, fresh generation and incarnation counters,
    the key set and the per-user index entry. Plain commands, no script: another writer."""
    from hookagent.store.ids import encode_id

    from .cache import chain

    sk, kname = store.layout.session(user_id, session_id), encode_id(key)
    client = store.client
    write_id = uuid.uuid4().hex[:16]
    await client.delete(sk.head(kname), sk.messages(kname))
    if messages:
        await client.rpush(sk.messages(kname), *messages)
    fields = {
        "v": version,
        "g": await client.hincrby(sk.meta, f"g:{kname}", 1),
        "n": len(messages),
        "c": chain("", messages),
        "i": await client.hincrby(sk.meta, f"i:{kname}", 1),
        "w": write_id,
        "d": head,
        "r": write_id[:8],
    }
    await client.hset(sk.head(kname), mapping=fields)
    await client.sadd(sk.keyset, kname)
    await client.zadd(store.layout.user_index(user_id), {encode_id(session_id): 0})


async def delete_prefix(client: Any, prefix: str) -> None:
    """Delete every key under ``prefix`` on every primary (standalone, cluster or sentinel)."""
    pattern = f"{prefix}:*"
    keys = [k async for k in client.scan_iter(match=pattern, count=1000)]
    for k in keys:  # one by one: cluster keys live in different slots
        await client.delete(k)


async def plant_log_orphan(
    log: Any, user_id: str, session_id: str, batch_id: str, events: Any
) -> None:
    """A session-log commit at ``head.seq + 1`` whose head never moved (a crash between
    the two writes, as a backend without one atomic step could leave): bytes, record, seq
    index and batch index written with plain commands, behind the log's back."""
    from hookagent.sessionlog import encode_commit

    head, seqs, blobs, records, batches, _ = log.layout.session(user_id, session_id).log_keys()
    data, digest = encode_commit(events)
    first = int(await log.client.hget(head, "s") or 0) + 1
    await log.client.hset(blobs, str(first), data)
    await log.client.hset(records, str(first), f"{first + len(events) - 1} {digest} {batch_id}")
    await log.client.zadd(seqs, {str(first): first})
    await log.client.hset(batches, batch_id, str(first))


async def plant_log_head(log: Any, user_id: str, session_id: str, seq: int) -> None:
    """Move a session log's head to ``seq`` without a commit (and index the session)."""
    from hookagent.store.ids import encode_id

    head = log.layout.session(user_id, session_id).log_keys()[0]
    await log.client.hset(head, "s", str(seq))
    await log.client.zadd(log.layout.log_index(user_id), {encode_id(session_id): 0})
