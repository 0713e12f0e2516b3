"""Socket writes bounded by ``asyncio.timeout`` instead of ``asyncio.wait_for``.

Why: redis-py bounds every command's socket write by ``socket_timeout`` with
``asyncio.wait_for``, which on Python 3.11 runs the write in a task of its own: about 25 us of
client CPU of a 60 us command, and an agent call sends two (counted with
``time.process_time``, see ``bench/notes/net-stores.md``). ``asyncio.timeout`` gives the same
bound in the caller's task (3.12's ``wait_for`` does that itself, so there nothing changes).
Only a connected connection's write takes this path; connecting, health checks, reads and
every error are redis-py's own, and the errors raised are the ones redis-py raises.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

_MADE: dict[type, type] = {}


def fast_writes(cls: type) -> type:
    """A subclass of the redis-py connection class ``cls`` whose writes make no task."""
    if sys.version_info >= (3, 12) or getattr(cls, "_hookagent_fast_writes", False):
        return cls
    made = _MADE.get(cls)
    if made is None:
        base_send = getattr(cls, "send_packed_command")  # noqa: B009 - any redis-py class

        async def send_packed_command(
            self: Any, command: bytes | str | Iterable[bytes], check_health: bool = True
        ) -> None:
            if not self.socket_timeout or not self.is_connected:
                await base_send(self, command, check_health)
            else:
                await _send(self, command, check_health)

        made = _MADE[cls] = type(
            cls.__name__,
            (cls,),
            {"send_packed_command": send_packed_command, "_hookagent_fast_writes": True},
        )
        made.__module__ = __name__
    return made


async def _send(self: Any, command: bytes | str | Iterable[bytes], check_health: bool) -> None:
    """redis-py's ``send_packed_command`` for a connected connection, bounded in-task."""
    if check_health:
        await self.check_health()
    if isinstance(command, str):
        command = command.encode()
    if isinstance(command, bytes):
        command = [command]
    try:
        async with asyncio.timeout(self.socket_timeout):
            self._writer.writelines(command)
            await self._writer.drain()
    except TimeoutError:
        await self.disconnect(nowait=True)
        raise RedisTimeoutError("Timeout writing to socket") from None
    except OSError as e:
        await self.disconnect(nowait=True)
        err_no, errmsg = ("UNKNOWN", e.args[0] if e.args else e) if len(e.args) < 2 else e.args[:2]
        raise RedisConnectionError(f"Error {err_no} while writing to socket. {errmsg}.") from e
    except BaseException:
        await self.disconnect(nowait=True)  # a half-sent command: the connection is unusable
        raise


def install(pool: Any) -> None:
    """Give a standalone or sentinel connection pool the fast-write connection class."""
    pool.connection_class = fast_writes(pool.connection_class)
