"""Entry point: registers the redis URL schemes with the kernel (state stores, session logs).

Discovery imports this module in every process, so redis-py (through ``.urls`` and
``.sessionlog``) is imported only when a store or a session log is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookagent.hookspecs import hookimpl

from .schemes import SCHEMES

if TYPE_CHECKING:
    from hookagent.registry import StoreRegister

    from .store import RedisAgentStateStore


def factory(url: str, **options: Any) -> RedisAgentStateStore:
    """The state store a redis URL names (``hookagent_store_redis.urls.connect``)."""
    from .urls import connect

    return connect(url, **options)


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
