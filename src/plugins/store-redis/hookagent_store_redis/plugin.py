"""Entry point: registers the redis URL schemes with the kernel."""

from __future__ import annotations

from hookagent.hookspecs import hookimpl
from hookagent.registry import StoreRegister

from .urls import SCHEMES, factory


@hookimpl
def hookagent_register_state_stores(register: StoreRegister) -> None:
    for scheme in SCHEMES:
        register(scheme, factory)
