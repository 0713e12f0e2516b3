"""The hookagent plugin: registers every SQL URL scheme this distribution serves.

Discovery imports this module in every process, so it imports SQLAlchemy and the drivers
(through ``.store`` and ``.sessionlog``) only when a store or a session log is made.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from hookagent.hookspecs import hookimpl

from .schemes import SCHEMES

if TYPE_CHECKING:
    from hookagent.registry import StoreRegister

    from .sessionlog import SqlSessionLog
    from .store import SQLAgentStateStore


def create_store(url: str, **options: Any) -> SQLAgentStateStore:
    """The store for ``url``, not yet opened (tables are checked on first use)."""
    from .store import SQLAgentStateStore

    return SQLAgentStateStore(url, **options)


class Opening:
    """An awaitable of the opened store (``SQLAgentStateStore.open``).

    The kernel awaits a factory's awaitable when it first needs the store, so the migrations
    check, the first connection and the prepared statements are paid at open, not inside the
    first call. A URL or option error is raised at once, by the constructor. Not a coroutine:
    a configuration that never makes a call leaves no "never awaited" warning.
    """

    def __init__(self, store: SQLAgentStateStore) -> None:
        self.store = store

    def __await__(self) -> Generator[Any, None, SQLAgentStateStore]:
        return self.store.open().__await__()


def open_store(url: str, **options: Any) -> Opening:
    """``factory(url, **options)`` registered for every scheme: the store, opened."""
    from .store import SQLAgentStateStore

    return Opening(SQLAgentStateStore(url, **options))


@hookimpl
def hookagent_register_state_stores(register: StoreRegister) -> None:
    for scheme in SCHEMES:
        register(scheme, open_store, locality="host" if "sqlite" in scheme else "shared")


class OpeningLog:
    """An awaitable of the opened session log (``SqlSessionLog.open``), as ``Opening``."""

    def __init__(self, log: SqlSessionLog) -> None:
        self.log = log

    def __await__(self) -> Generator[Any, None, SqlSessionLog]:
        return self.log.open().__await__()


def open_session_log(url: str, **options: Any) -> OpeningLog:
    """``factory(url, **options)`` registered for every scheme: the session log, opened."""
    from .sessionlog import SqlSessionLog

    return OpeningLog(SqlSessionLog(url, **options))


@hookimpl
def hookagent_register_session_logs(register: Callable[..., None]) -> None:
    # the kernel types this ``register`` as the state stores' StoreRegister (factories of
    # AgentStateStore); it takes SessionLog factories
    for scheme in SCHEMES:
        register(scheme, open_session_log, locality="host" if "sqlite" in scheme else "shared")
