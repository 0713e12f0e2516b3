"""Redis state store for hookagent: standalone, Cluster and Sentinel; Lua CAS; fenced gate."""

from .errors import VersionRegression
from .gate import RedisSessionGate
from .keys import DEFAULT_PREFIX, KeyLayout
from .store import RedisAgentStateStore
from .urls import SCHEMES, connect

__all__ = [
    "DEFAULT_PREFIX",
    "SCHEMES",
    "KeyLayout",
    "RedisAgentStateStore",
    "RedisSessionGate",
    "VersionRegression",
    "connect",
]
