"""Open a state store from a URL outside an agent (admin scripts, adapters, migrations).

The URL rules are those of ``AgentConfig(state_store=url)``: the scheme before ``://`` picks
the store plugin that registered it through ``hookagent_register_state_stores`` (a URL
without ``://`` is a ``file`` path), and an unserved scheme raises ``StoreConfigurationError``
naming the registered ones. The caller owns the opened store and closes it (``aclose``).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import anyio
import anyio.from_thread
import pluggy

from ..errors import AgentError, HookContractError, StoreConfigurationError
from ..registry import collect_stores
from ..state import AgentState
from .base import AGENT_STATE_KEY, AgentStateStore, ExpectedVersion, Fence, SessionPage, Versioned


def url_scheme(url: str) -> str:
    """The scheme that picks the store plugin: before ``://``, else ``file`` (a path)."""
    return url.split("://", 1)[0] if "://" in url else "file"


def store_factory(pm: pluggy.PluginManager, url: object) -> tuple[Callable[..., Any], str]:
    """The registered ``factory(url, **options)`` serving ``url``, and its plugin's name."""
    factory, plugin, _ = store_registration(pm, url)
    return factory, plugin


def store_registration(
    pm: pluggy.PluginManager, url: object
) -> tuple[Callable[..., Any], str, str]:
    """The factory serving ``url``, its plugin's name and the scheme's declared locality."""
    if not isinstance(url, str) or not url.strip():
        raise StoreConfigurationError(
            f"a store URL is a non-empty string such as 'file:///var/lib/app' or "
            f"'redis://127.0.0.1:6379/0', got {url!r}"
        )
    scheme = url_scheme(url)
    factories = collect_stores(pm)
    if scheme not in factories:
        known = ", ".join(sorted(factories)) or "none (install a store plugin)"
        raise StoreConfigurationError(
            f"no store plugin serves {scheme!r} URLs ({url!r}); registered: {known}"
        )
    return factories[scheme]


async def open_store(
    url: str, /, *, plugin_manager: pluggy.PluginManager | None = None, **options: Any
) -> AgentStateStore:
    """The store ``url`` names, opened (connections made, schema checked); close it yourself.

    ``options`` go to the store plugin as ``AgentConfig(state_store_options=...)`` would.
    ``plugin_manager`` defaults to a fresh one with the installed entry points
    (``create_plugin_manager()``, so the ``HOOKAGENT_*PLUGIN*`` variables apply).
    """
    if plugin_manager is None:
        from ..plugins import create_plugin_manager

        plugin_manager = create_plugin_manager()
    factory, plugin = store_factory(plugin_manager, url)
    store = factory(url, **options)
    if inspect.isawaitable(store):
        store = await store
    if not isinstance(store, AgentStateStore):
        raise HookContractError(
            f"plugin {plugin!r}: the store factory for {url_scheme(url)!r} URLs returned "
            f"{type(store).__name__}, not an AgentStateStore"
        )
    return store


class SyncStore:
    """Blocking twins of a store's methods, run on the event-loop thread that opened it."""

    def __init__(self, store: AgentStateStore, portal: anyio.from_thread.BlockingPortal) -> None:
        self.store = store
        self._portal = portal

    def get_versioned(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> Versioned:
        return self._portal.call(self.store.get_versioned, user_id, session_id, key)

    def get(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> AgentState | None:
        """The stored state (None if absent), without its version."""
        return self.get_versioned(user_id, session_id, key).state

    def save_if_version(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected_version: ExpectedVersion,
        *,
        key: str = AGENT_STATE_KEY,
        fence: Fence | None = None,
    ) -> int:
        save = partial(self.store.save_if_version, key=key, fence=fence)
        return self._portal.call(save, user_id, session_id, state, expected_version)

    def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        return self._portal.call(self.store.delete, user_id, session_id, key)

    def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        return self._portal.call(self.store.exists, user_id, session_id, key)

    def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        listing = partial(self.store.list_session_ids, limit=limit, cursor=cursor)
        return self._portal.call(listing, user_id)


@contextlib.contextmanager
def open_store_sync(
    url: str, /, *, plugin_manager: pluggy.PluginManager | None = None, **options: Any
) -> Iterator[SyncStore]:
    """``with open_store_sync(url) as store:``, for code without an event loop.

    A context manager, not a function returning a store: a store's connections belong to the
    event loop that opened them, so the sync twin runs one loop thread for the store's
    lifetime, and the ``with`` block bounds it (the store is closed, the thread stopped, on
    exit).
    """
    if _in_event_loop():
        raise AgentError("open_store_sync was called inside an event loop: await open_store")
    with anyio.from_thread.start_blocking_portal() as portal:
        opening = partial(open_store, url, plugin_manager=plugin_manager, **options)
        store = portal.call(opening)
        try:
            yield SyncStore(store, portal)
        finally:
            portal.call(store.aclose)


def _in_event_loop() -> bool:
    try:
        anyio.get_current_task()
    except Exception:  # no running event loop: the normal case
        return False
    return True
