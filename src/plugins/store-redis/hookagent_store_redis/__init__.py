"""Redis state store for hookagent: standalone, Cluster and Sentinel; Lua CAS; fenced gate."""

from .errors import FenceEpochsExhausted, VersionRegression
from .gate import RedisSessionGate
from .keys import DEFAULT_PREFIX, KeyLayout
from .store import RedisAgentStateStore
from .urls import SCHEMES, connect

__all__ = [
    "DEFAULT_PREFIX",
    "SCHEMES",
    "FenceEpochsExhausted",
    "KeyLayout",
    "RedisAgentStateStore",
    "RedisSessionGate",
    "VersionRegression",
    "connect",
]
