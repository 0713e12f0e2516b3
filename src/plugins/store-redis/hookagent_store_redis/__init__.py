"""Redis state store for hookagent: standalone, Cluster and Sentinel; Lua CAS; fenced gate; the session log.

The names below are imported on first use (``hookagent.lazy``): plugin discovery imports this
package in every process, and they pull in redis-py.
"""

from typing import TYPE_CHECKING

from hookagent.lazy import lazy_exports

from .schemes import SCHEMES

if TYPE_CHECKING:
    from .errors import FenceEpochsExhausted, VersionRegression
    from .gate import RedisSessionGate
    from .keys import DEFAULT_PREFIX, KeyLayout
    from .sessionlog import RedisSessionLog, connect_log
    from .store import RedisAgentStateStore
    from .urls import connect

__all__ = [
    "DEFAULT_PREFIX",
    "SCHEMES",
    "FenceEpochsExhausted",
    "KeyLayout",
    "RedisAgentStateStore",
    "RedisSessionGate",
    "RedisSessionLog",
    "VersionRegression",
    "connect",
    "connect_log",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FenceEpochsExhausted": ".errors",
        "VersionRegression": ".errors",
        "RedisSessionGate": ".gate",
        "DEFAULT_PREFIX": ".keys",
        "KeyLayout": ".keys",
        "RedisSessionLog": ".sessionlog",
        "connect_log": ".sessionlog",
        "RedisAgentStateStore": ".store",
        "connect": ".urls",
    },
)
