"""A distributed per-session gate: a lease with a fencing epoch and an owner token.

Why: two replicas serving the same session must not run turns at the same time, and a holder
that stalls past its lease (GC pause, partition) must not overwrite the state written by the
one that took over. ``acquire`` yields a ``Fence(epoch, owner)``; pass it to
``save_if_version(..., fence=...)``: the store's save script refuses (``Fenced``) any epoch
older than the newest one handed out for the session, or the same epoch with another owner.

Waiting is FIFO across processes among live waiters: each waiter takes a ticket in a
per-session sorted set and the lease goes to the lowest ticket once free; a waiter that stops
polling for ``waiter_window`` seconds loses its place. Waiters poll with capped backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

from hookagent.errors import (
    CorruptState,
    InvalidStoreArgument,
    SessionBusy,
    StoreConfigurationError,
)
from hookagent.store.base import Fence
from hookagent.store.ids import check_fence, check_owner, check_slot

from . import lua
from .errors import FenceEpochsExhausted, translated
from .keys import DEFAULT_PREFIX, KeyLayout
from .options import MAX_TTL_MS

_ACQUIRE, _RENEW, _RELEASE, _LEAVE = (
    lua.Script(lua.ACQUIRE),
    lua.Script(lua.RENEW),
    lua.Script(lua.RELEASE),
    lua.Script(lua.LEAVE),
)


def _seconds(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_held(fence: object) -> None:
    """``renew``/``release`` take the fence ``acquire`` yielded: a Fence, never None."""
    if fence is None:
        raise InvalidStoreArgument("fence must be the Fence that acquire yielded, got None")
    check_fence(fence)


def new_owner() -> str:
    """A token unique to one acquisition: host, pid and 64 random bits."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(8)}"


class RedisSessionGate:
    """Mutual exclusion per (user_id, session_id) across processes sharing a Redis.

    Build it on the store (``RedisSessionGate(store)``) so that both use the same client and
    prefix: the save script reads the gate's epoch counter from the same hash.
    """

    def __init__(
        self,
        store_or_client: Any,
        *,
        prefix: str | None = None,
        lease_ttl: float = 30.0,
        auto_renew: bool = True,
        poll_initial: float = 0.002,
        poll_max: float = 0.05,
        waiter_window: float = 2.0,
    ) -> None:
        layout = getattr(store_or_client, "layout", None)
        if isinstance(layout, KeyLayout):
            self.client = store_or_client.client
            self.layout = layout if prefix is None else KeyLayout(prefix)
        else:
            self.client = store_or_client
            self.layout = KeyLayout(DEFAULT_PREFIX if prefix is None else prefix)
        for name, value in (
            ("lease_ttl", lease_ttl),
            ("poll_initial", poll_initial),
            ("poll_max", poll_max),
            ("waiter_window", waiter_window),
        ):
            if not _seconds(value) or not 0 < value * 1000 <= MAX_TTL_MS:
                raise StoreConfigurationError(
                    f"gate option {name} must be a finite number of seconds > 0 "
                    f"(at most {MAX_TTL_MS // 1000}), got {value!r}"
                )
        if not poll_initial <= poll_max < waiter_window:
            raise StoreConfigurationError(
                "gate options need poll_initial <= poll_max < waiter_window, got "
                f"{poll_initial!r}, {poll_max!r}, {waiter_window!r}"
            )
        if not isinstance(auto_renew, bool):
            raise StoreConfigurationError(
                f"gate option auto_renew must be a bool, got {auto_renew!r}"
            )
        self.lease_ms = max(1, int(lease_ttl * 1000))
        self.auto_renew = auto_renew
        self.poll_initial, self.poll_max = poll_initial, poll_max
        self.window_ms = int(waiter_window * 1000)

    def __repr__(self) -> str:
        return f"RedisSessionGate(prefix={self.layout.prefix!r}, lease_ms={self.lease_ms})"

    # ------------------------------------------------------------------ single steps

    async def try_acquire(
        self, user_id: str, session_id: str, owner: str | None = None, *, queue: bool = False
    ) -> Fence | None:
        """One attempt (one round trip): the fence if granted, else None.

        ``owner`` (default: a fresh ``new_owner()``) follows the kernel's rules for a fence
        owner (``check_owner``), so the fence it yields is one every save accepts.
        """
        check_slot(user_id, session_id)
        if owner is None:
            owner = new_owner()
        elif check_owner(owner) == "":  # the fence's rules; a lease token must name someone
            raise InvalidStoreArgument("owner must be a non-empty str or None, got ''")
        sk = self.layout.session(user_id, session_id)
        with translated("gate acquire"):
            res = await _ACQUIRE.run(
                self.client,
                [sk.lease, sk.meta, sk.queue, sk.queue_deadlines],
                [owner, self.lease_ms, self.window_ms if queue else 0],
            )
        if int(res[0]) == -2:
            raise FenceEpochsExhausted(user_id, session_id, int(res[1]), sk.meta)
        if int(res[0]) < 0:
            raise CorruptState(
                f"the gate counters (meta ge/fe/qt) of user_id={user_id!r} "
                f"session_id={session_id!r} are damaged: no epoch can be handed out safely"
            )
        return Fence(int(res[1]), owner) if int(res[0]) == 1 else None

    async def renew(self, user_id: str, session_id: str, fence: Fence) -> bool:
        """Extend the lease by ``lease_ttl``; False if it expired or was taken over."""
        check_slot(user_id, session_id)
        _check_held(fence)
        sk = self.layout.session(user_id, session_id)
        with translated("gate renew"):
            res = await _RENEW.run(
                self.client, [sk.lease], [fence.owner, fence.epoch, self.lease_ms]
            )
        return int(res) == 1

    async def release(self, user_id: str, session_id: str, fence: Fence) -> bool:
        """Free the lease if it is still ours; False if it had expired or was taken over."""
        check_slot(user_id, session_id)
        _check_held(fence)
        sk = self.layout.session(user_id, session_id)
        with translated("gate release"):
            res = await _RELEASE.run(self.client, [sk.lease], [fence.owner, fence.epoch])
        return int(res) == 1

    async def _leave(self, user_id: str, session_id: str, owner: str) -> None:
        sk = self.layout.session(user_id, session_id)
        with translated("gate leave"):
            await _LEAVE.run(self.client, [sk.lease, sk.queue, sk.queue_deadlines], [owner])

    # ------------------------------------------------------------------ waiting

    async def wait(self, user_id: str, session_id: str, *, timeout: float | None) -> Fence:
        """Queue for the lease; ``SessionBusy`` when ``timeout`` seconds pass (None: forever)."""
        if timeout is not None and not (
            isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout >= 0
        ):
            raise InvalidStoreArgument(
                f"timeout must be None or a number of seconds >= 0, got {timeout!r}"
            )
        owner = new_owner()
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = self.poll_initial
        try:
            while True:
                fence = await self.try_acquire(user_id, session_id, owner, queue=True)
                if fence is not None:
                    return fence
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise SessionBusy(
                        f"session user_id={user_id!r} session_id={session_id!r} is held by "
                        f"another owner; gave up after {timeout}s"
                    )
                await asyncio.sleep(delay if left is None else min(delay, left))
                delay = min(delay * 1.5, self.poll_max)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._leave(user_id, session_id, owner))
            raise

    @contextlib.asynccontextmanager
    async def acquire(
        self, user_id: str, session_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[Fence]:
        """``async with gate.acquire(u, s, timeout=5) as fence:`` -- pass ``fence`` to saves.

        The lease is renewed every third of ``lease_ttl`` while the block runs (unless
        ``auto_renew=False``) and released at exit. If renewal fails the block keeps running,
        but its saves are refused with ``Fenced`` once another owner took over.
        """
        fence = await self.wait(user_id, session_id, timeout=timeout)
        renewer = None
        if self.auto_renew:
            renewer = asyncio.create_task(self._renew_loop(user_id, session_id, fence))
        try:
            yield fence
        finally:
            if renewer is not None:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await renewer
            with contextlib.suppress(Exception):  # an unreleased lease expires by itself
                await asyncio.shield(self.release(user_id, session_id, fence))

    async def _renew_loop(self, user_id: str, session_id: str, fence: Fence) -> None:
        period = self.lease_ms / 3000
        me = asyncio.current_task()
        while True:
            await asyncio.sleep(period)
            try:
                if not await self.renew(user_id, session_id, fence):
                    return  # lost: the fence makes any later save fail
            except Exception:
                # transient: the next period retries -- unless this task was cancelled and
                # the cancellation surfaced as an error (a timeout racing it in the driver):
                # then retrying would keep the block's exit waiting forever
                if me is not None and me.cancelling():
                    return
                continue
