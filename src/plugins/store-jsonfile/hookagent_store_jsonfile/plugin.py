"""Entry point ``store-jsonfile``: the default store, the URL schemes it serves, and the
session-log backend on the same files (``sessionlog``)."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, cast

from hookagent.hookspecs import hookimpl

from .config import FSSPEC_SCHEMES, LOCAL_SCHEMES, LOG_SCHEMES, default_root, open_store

if TYPE_CHECKING:
    from hookagent.registry import SessionLogRegister, StoreRegister

    from .local import LocalJsonFileStore

# the stores and logs are imported when first made: discovery imports this module everywhere


class Opening:
    """An awaitable of an opened store (``LocalJsonFileStore.open``): the kernel awaits a
    factory's awaitable when it first needs the store, so the root's open and the workers'
    starts are paid there, not inside the first call. A URL or option error is raised at
    once, by the factory. Not a coroutine: a configuration that never makes a call leaves no
    "never awaited" warning."""

    def __init__(self, store: LocalJsonFileStore) -> None:
        self.store = store

    def __await__(self) -> Generator[Any, None, LocalJsonFileStore]:
        return self.store.open().__await__()


def _factory(url: str, **options: Any) -> Any:
    store = open_store(url, **options)
    if not hasattr(store, "open"):  # the fsspec store: opened by its first operation
        return store
    return Opening(cast("LocalJsonFileStore", store))  # (no import of either module here)


@hookimpl
def hookagent_register_state_stores(register: StoreRegister) -> None:
    for scheme in LOCAL_SCHEMES:
        register(scheme, _factory, locality="host")
    for scheme in FSSPEC_SCHEMES:
        register(scheme, _factory, locality="process" if scheme == "memory" else "shared")


def _log_factory(url: str, **options: Any) -> Any:
    from .sessionlog import open_session_log

    return open_session_log(url, **options)


@hookimpl
def hookagent_register_session_logs(register: SessionLogRegister) -> None:
    """``file``/``jsonfile`` (local disk, locality "host") and the fsspec protocols the
    state store serves, except ``memory`` (the session-log plugin's)."""
    for scheme in LOG_SCHEMES:
        register(scheme, _log_factory, locality="host" if scheme in LOCAL_SCHEMES else "shared")


@hookimpl
def hookagent_default_state_store(agent_id: str) -> LocalJsonFileStore:
    """``~/.hookagent/state/<encoded agent_id>/`` (or under ``$HOOKAGENT_STATE_HOME``).

    Nothing is created on disk until the store is first used.
    """
    from .local import LocalJsonFileStore

    return LocalJsonFileStore(default_root(agent_id))
