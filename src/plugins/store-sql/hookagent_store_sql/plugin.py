"""The hookagent plugin: registers every SQL URL scheme this distribution serves."""

from __future__ import annotations

from typing import Any

from hookagent.hookspecs import hookimpl

from .config import SCHEMES
from .store import SQLAgentStateStore


def create_store(url: str, **options: Any) -> SQLAgentStateStore:
    """``factory(url, **options)``: the store for ``url`` (tables are created on first use)."""
    return SQLAgentStateStore(url, **options)


@hookimpl
def hookagent_register_state_stores(register: Any) -> None:
    for scheme in SCHEMES:
        register(scheme, create_store)
