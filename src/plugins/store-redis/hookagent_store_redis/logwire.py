"""The session log's scripts sent on a held connection with pre-encoded arguments.

Why: a W1 call is five log scripts (an acquire, four commits) and, through redis-py's
``execute_command``, each paid the client's command layer (the retry wrapper, the pool's
lock, its observability hooks and its connected-and-empty check, the encoder's per-argument
``isinstance``/``encode``) on top of the round trip itself (bench/notes/session-log.md,
session 9). Here a log handle keeps the connections it took from the client's pool and
writes each script as one RESP buffer whose fixed parts (the SHA, the session's keys, the
writer's epoch and owner) were encoded once. Only standalone and Sentinel clients take
this path; a cluster client (which routes by slot) keeps redis-py's ``evalsha``.

What stays redis-py's: connecting (Sentinel's master lookup included), the socket
timeouts of the write and the read, the reply parser and its typed errors. A connection
is kept for the next script only when its reply was read whole (an answer or an error
reply); anything else (a lost socket, a timeout, a cancellation mid-read) disconnects it
and gives it back to the pool, and the caller's ``retrying`` decides what to re-send.
Connections held are the pool's (in use), so closing the client closes them too.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .lua import Script

KEPT = 8
"""Connections a handle keeps between scripts (more concurrent scripts take more, then
give the extra back to the pool); at most half a bounded pool's ``max_connections``, so
that the commands that go through redis-py still find a connection."""


def bulk(value: bytes) -> bytes:
    """One RESP bulk string."""
    return b"$%d\r\n%b\r\n" % (len(value), value)


def arg(value: str | int | bytes) -> bytes:
    """A script argument as RESP: text as UTF-8, ints in decimal (what redis-py sends)."""
    if type(value) is bytes:
        return bulk(value)
    if type(value) is int:
        return bulk(b"%d" % value)
    return bulk(str(value).encode("utf-8"))


class Packed:
    """A script with its keys (and any leading arguments) encoded once: ``command(tail)``
    is the whole RESP buffer for EVALSHA, ``command(tail, source=True)`` for EVAL."""

    __slots__ = ("count", "fixed", "script", "sha_head", "src_head")

    def __init__(self, script: Script, keys: list[str], lead: list[str | int | bytes]) -> None:
        self.script = script
        self.count = 3 + len(keys) + len(lead)  # EVALSHA, sha, numkeys, keys, lead
        self.fixed = arg(len(keys)) + b"".join(arg(k) for k in keys) + b"".join(map(arg, lead))
        self.sha_head = bulk(b"EVALSHA") + bulk(script.sha.encode())
        self.src_head = bulk(b"EVAL") + bulk(script.source.encode("utf-8"))

    def command(self, tail: list[bytes], *, source: bool = False) -> list[bytes]:
        """The buffers to write: ``tail`` holds the remaining arguments, each ``arg()``'d."""
        head = self.src_head if source else self.sha_head
        return [b"*%d\r\n" % (self.count + len(tail)), head, self.fixed, *tail]


def wire_for(client: Any) -> Wire | None:
    """A ``Wire`` for a standalone or Sentinel client of redis-py's asyncio API, else None
    (a cluster client, a single-connection client, anything else: redis-py's own path)."""
    from redis.asyncio import Redis

    if type(client) is not Redis and not isinstance(client, Redis):
        return None
    if getattr(client, "single_connection_client", False) or client.connection is not None:
        return None
    return Wire(client.connection_pool)


class Wire:
    """Connections taken from one pool and reused for the log's scripts (see the module)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.idle: list[Any] = []
        bound = getattr(pool, "max_connections", None)
        self.kept = min(KEPT, bound // 2) if type(bound) is int else KEPT

    async def run(self, packed: Packed, tail: list[bytes]) -> Any:
        """The script's answer; NOSCRIPT (a restart, a failover, SCRIPT FLUSH) -> EVAL once."""
        try:
            return await self.call(packed.command(tail))
        except NoScriptError:
            return await self.call(packed.command(tail, source=True))

    async def call(self, buffers: list[bytes]) -> Any:
        """One command on a held connection: its reply, or redis-py's exception."""
        conn = self.idle.pop() if self.idle else await self.pool.get_connection()
        try:
            if not conn.is_connected:  # after an error, or the pool's disconnect()
                await conn.connect()
            await conn.send_packed_command(buffers)
            reply = await conn.read_response()
        except ResponseError:  # an error reply, read whole: the connection is in step
            await self._keep(conn)
            raise
        except (RedisConnectionError, RedisTimeoutError, OSError):
            # lost or timed out: the server restarted, failed over or closed idle clients,
            # and the idle connections share its fate (the pool's own liveness check is
            # not run on a held connection): drop them all, the next call connects afresh
            idle, self.idle = self.idle, []
            for held in (conn, *idle):
                await self._drop(held)
            raise
        except BaseException:  # cancelled mid-command: this connection is not reusable
            await self._drop(conn)
            raise
        await self._keep(conn)
        return reply

    async def _keep(self, conn: Any) -> None:
        if len(self.idle) < self.kept:
            self.idle.append(conn)
        else:
            await self.pool.release(conn)

    async def _drop(self, conn: Any) -> None:
        try:
            await conn.disconnect(nowait=True)
        finally:
            await self.pool.release(conn)

    async def aclose(self) -> None:
        """Give the held connections back to the pool."""
        idle, self.idle = self.idle, []
        for conn in idle:
            await self.pool.release(conn)
