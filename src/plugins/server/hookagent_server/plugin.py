"""The server plugin: adds the ``hookagent_authenticate`` hook and ``hookagent serve``."""

from __future__ import annotations

from typing import Any

import pluggy
from hookagent.hookspecs import hookimpl

from .auth import ensure_hookspec


@hookimpl
def hookagent_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    ensure_hookspec(pluginmanager)


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    register(
        "serve",
        help="serve the agent's sessions over HTTP (queued runs, SSE streams; docs/server.md)",
        module=f"{__package__}.serve",  # imported when the command runs
    )
