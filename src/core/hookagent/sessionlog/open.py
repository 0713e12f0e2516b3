"""Open a session log from a URL: the scheme picks the backend a plugin registered.

Backends live in the store plugins that own the I/O (``file``, ``redis``, ``postgresql``,
...), registered through ``hookagent_register_session_logs``; the rules are those of
``open_store`` (a URL without ``://`` is a ``file`` path, an unserved scheme is a
``StoreConfigurationError`` naming the registered ones).
"""

from __future__ import annotations

import inspect
from typing import Any

import pluggy

from ..errors import HookContractError, StoreConfigurationError
from ..registry import StoreRegistrar, collect
from ..store.open import url_scheme
from .base import SessionLog

HOOK = "hookagent_register_session_logs"


def collect_session_logs(pm: pluggy.PluginManager) -> dict[str, tuple[Any, str, str]]:
    """scheme → (factory, plugin name, locality), from ``hookagent_register_session_logs``."""
    localities: dict[str, str] = {}

    def make(what: str, sink: dict[str, tuple[Any, str]], plugin: str) -> StoreRegistrar:
        return StoreRegistrar(what, sink, plugin, localities)

    found = collect(pm, HOOK, "session log scheme", make)
    return {k: (f, p, localities.get(k, "shared")) for k, (f, p) in found.items()}


def session_log_registration(pm: pluggy.PluginManager, url: object) -> tuple[Any, str, str]:
    """The factory serving ``url``, its plugin's name and the scheme's locality."""
    if not isinstance(url, str) or not url.strip():
        raise StoreConfigurationError(
            "a session log URL is a non-empty string such as 'file:///var/lib/app/log' or "
            f"'redis://127.0.0.1:6379/0', got {url!r}"
        )
    scheme = url_scheme(url)
    factories = collect_session_logs(pm)
    if scheme not in factories:
        known = ", ".join(sorted(factories)) or "none (install a store plugin with a log backend)"
        raise StoreConfigurationError(
            f"no plugin serves {scheme!r} session log URLs ({url!r}); registered: {known}"
        )
    return factories[scheme]


async def open_session_log(
    url: str, /, *, plugin_manager: pluggy.PluginManager | None = None, **options: Any
) -> SessionLog:
    """The session log ``url`` names, opened; the caller closes it (``aclose``)."""
    if plugin_manager is None:
        from ..plugins import create_plugin_manager

        plugin_manager = create_plugin_manager()
    factory, plugin, _ = session_log_registration(plugin_manager, url)
    log = factory(url, **options)
    if inspect.isawaitable(log):
        log = await log
    if not isinstance(log, SessionLog):
        raise HookContractError(
            f"plugin {plugin!r}: the session log factory for {url_scheme(url)!r} URLs returned "
            f"{type(log).__name__}, not a SessionLog"
        )
    return log
