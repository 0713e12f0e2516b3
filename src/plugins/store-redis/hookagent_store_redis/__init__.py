"""Redis state store for hookagent: standalone, Cluster and Sentinel; Lua CAS; fenced gate; the session log."""

from .errors import FenceEpochsExhausted, VersionRegression
from .gate import RedisSessionGate
from .keys import DEFAULT_PREFIX, KeyLayout
from .sessionlog import RedisSessionLog, connect_log
from .store import RedisAgentStateStore
from .urls import SCHEMES, connect

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
