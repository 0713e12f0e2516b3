"""Driver errors become the kernel's typed errors; the one error of our own is a regression.

Why: callers handle ``StoreUnavailable``/``StorageFull``/``StoreConfigurationError``, never a
redis-py class. A regression (a load or a compare-and-set showing an older version than this
store instance already saw, as after a failover that lost acknowledged writes) is an
unavailability of the data the caller was promised, so it subclasses ``StoreUnavailable``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from hookagent.errors import (
    CorruptState,
    SessionStoreError,
    StorageFull,
    StoreConfigurationError,
    StoreUnavailable,
)
from redis import exceptions as rx

T = TypeVar("T")
_RETRYABLE = (rx.ConnectionError, rx.TimeoutError)


class VersionRegression(StoreUnavailable):
    """A write this instance saw acknowledged (or loaded) is no longer in the slot's history.

    ``reason`` is ``"lost"`` (an older version, another write at that version, or the slot
    gone) or ``"deep"`` (the version fell out of the lineage ring: it cannot be told, and
    the store would rather report it than let a loss pass silently).
    """

    def __init__(
        self,
        user_id: str,
        session_id: str,
        key: str,
        seen: tuple[int, int],
        found: tuple[int, int],
        reason: str = "lost",
    ) -> None:
        self.user_id, self.session_id, self.key = user_id, session_id, key
        self.seen, self.found, self.reason = seen, found, reason
        why = (
            "acknowledged writes were lost, e.g. by a failover"
            if reason == "lost"
            else "the version seen is older than the lineage ring reaches, so whether it is "
            "still in the history cannot be told"
        )
        super().__init__(
            f"version regression on user_id={user_id!r} session_id={session_id!r} key={key!r}: "
            f"this store saw incarnation/version {seen} and the server now has {found}, "
            f"without that write in its history ({why})"
        )


class FenceEpochsExhausted(SessionStoreError):
    """The gate cannot hand out another epoch: the next one would reach 2**53.

    Why its own class: it is permanent for the session (retrying never helps, unlike
    ``StoreUnavailable``) and nothing is damaged (unlike ``CorruptState``). It follows a save
    with a ``Fence`` from another source at epoch 2**53 - 1 (or 2**53 - 1 acquisitions).
    """

    def __init__(self, user_id: str, session_id: str, newest: int, meta_key: str) -> None:
        self.user_id, self.session_id, self.newest, self.meta_key = (
            user_id,
            session_id,
            newest,
            meta_key,
        )
        super().__init__(
            f"the gate of user_id={user_id!r} session_id={session_id!r} cannot hand out an "
            f"epoch: the newest is {newest} and fence epochs stay below 2**53 (a save was "
            "given a Fence at the limit). Nothing was written. Keep fences from another source "
            "below 2**53 - 1; to reuse the session once no holder is live, delete the fields "
            f"ge, fe and fo of {meta_key!r} (HDEL), or use another session id"
        )


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Re-raise redis-py and socket errors as typed hookagent errors, cause chained."""
    try:
        yield
    except (rx.AuthenticationError, rx.AuthorizationError) as exc:
        raise StoreConfigurationError(
            f"redis refused the credentials during {what}: {exc}"
        ) from exc
    except rx.OutOfMemoryError as exc:
        raise StorageFull(f"redis is out of memory (maxmemory) during {what}: {exc}") from exc
    except rx.ResponseError as exc:
        if str(exc).startswith("OOM"):
            raise StorageFull(f"redis is out of memory during {what}: {exc}") from exc
        if "WRONGTYPE" in str(exc):  # one of our keys holds another type: damaged, not down
            raise CorruptState(
                f"a key of the store holds the wrong type of value during {what}: {exc}"
            ) from exc
        raise StoreUnavailable(f"redis answered an error during {what}: {exc}") from exc
    except TypeError as exc:  # the client choked on an option value (socket_timeout="5")
        raise StoreConfigurationError(
            f"the redis client rejected its configuration during {what}: {exc}"
        ) from exc
    except (rx.RedisError, OSError, TimeoutError) as exc:
        raise StoreUnavailable(
            f"redis is unreachable during {what} (outcome unknown for writes): "
            f"{type(exc).__name__}: {exc}"
        ) from exc


async def retrying(send: Callable[[], Awaitable[T]], what: str, retries: int = 1) -> tuple[T, bool]:
    """``send()`` with typed errors; a lost connection (killed client, failover) is re-sent
    ``retries`` times after 50 ms. Only for calls that are safe to repeat. Returns (answer,
    re-sent?): a re-sent write cannot trust a refusal (its first send may have landed)."""
    for attempt in range(retries + 1):
        try:
            with translated(what):
                return await send(), attempt > 0
        except StoreUnavailable as exc:
            if attempt == retries or not isinstance(exc.__cause__, _RETRYABLE):
                raise
            await asyncio.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")
