"""The CLI plugin: adds its hook specification and registers the built-in subcommands."""

from __future__ import annotations

from typing import Any

import pluggy
from hookagent.hookspecs import hookimpl

from . import hookspecs


@hookimpl
def hookagent_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    caller = getattr(pluginmanager.hook, "hookagent_register_cli_commands", None)
    if caller is None or caller.spec is None:  # idempotent: the CLI may have added it already
        pluginmanager.add_hookspecs(hookspecs)


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    from . import chat, demo, plugins_cmd, run, sessions

    chat.register(register)
    run.register(register)
    sessions.register(register)
    plugins_cmd.register(register)
    demo.register(register)
