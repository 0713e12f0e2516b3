"""Entry point: registers the redis URL schemes with the kernel."""

from __future__ import annotations

from typing import Any

from hookagent.hookspecs import hookimpl

from .urls import SCHEMES, factory


@hookimpl
def hookagent_register_state_stores(register: Any) -> None:
    for scheme in SCHEMES:
        register(scheme, factory)
