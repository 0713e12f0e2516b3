"""The hook implementation; the ``example-store`` entry point names this module.

``AgentConfig(state_store="example-sqlite:///path/to/agent.db")`` is bound to
``open_store`` through ``hookagent_register_state_stores``.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from hookagent import StoreConfigurationError, StoreRegister, hookimpl

from .store import ExampleSQLiteStore

SCHEME = "example-sqlite"
_OPTIONS = {"busy_timeout": (int, float), "cache_slots": (int,)}


def open_store(url: str, **options: Any) -> ExampleSQLiteStore:
    """``factory(url, **options)``: ``example-sqlite:///abs/path.db``, ``example-sqlite://rel.db``
    or ``example-sqlite://:memory:``. Options: ``busy_timeout`` (seconds a writer waits for
    another one, default 5), ``cache_slots`` (slots whose decoded history is kept, default 256).

    Nothing is opened here (the factory may run inside an event loop): the file is opened,
    and its tables created, by the store's first operation.
    """
    prefix = f"{SCHEME}://"
    if not isinstance(url, str) or not url.startswith(prefix):
        raise StoreConfigurationError(f"not an {SCHEME} URL: {url!r} (expected {prefix}<path>)")
    raw = url[len(prefix) :]
    if "?" in raw or "#" in raw:
        raise StoreConfigurationError(
            f"{url!r}: this store takes no query or fragment; pass state_store_options instead"
        )
    path = urllib.parse.unquote(raw)
    if not path or "\x00" in path:
        raise StoreConfigurationError(f"{url!r} names no database file")
    for name, value in options.items():
        types = _OPTIONS.get(name)
        if types is None:
            raise StoreConfigurationError(
                f"unknown option {name!r} for {SCHEME}; accepted: {', '.join(sorted(_OPTIONS))}"
            )
        if type(value) not in types or value < 0 or (name == "busy_timeout" and value == 0):
            raise StoreConfigurationError(f"option {name}={value!r} is out of range")
    return ExampleSQLiteStore(path, **options)


@hookimpl
def hookagent_register_state_stores(register: StoreRegister) -> None:
    register(SCHEME, open_store, locality="host")
