"""Entry point: registers the redis URL schemes with the kernel (state stores, session logs)."""

from __future__ import annotations

from typing import Any

from hookagent.hookspecs import hookimpl
from hookagent.registry import StoreRegister

from .urls import SCHEMES, factory


def log_factory(url: str, **options: Any) -> Any:
    """The session log a redis URL names (``RedisSessionLog``); imported on first use."""
    from .sessionlog import connect_log

    return connect_log(url, **options)


@hookimpl
def hookagent_register_state_stores(register: StoreRegister) -> None:
    for scheme in SCHEMES:
        register(scheme, factory)


@hookimpl
def hookagent_register_session_logs(register: StoreRegister) -> None:
    for scheme in SCHEMES:
        register(scheme, log_factory, locality="shared")
