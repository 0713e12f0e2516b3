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


# name -> (module with configure and run, help, common): each module is imported only when
# its command runs (hookagent_cli.commands.Deferred), not for ``hookagent --help``
BUILTINS: dict[str, tuple[str, str, bool]] = {
    "chat": (
        "chat",
        "talk with the agent interactively (streamed, interruptible, resumable)",
        True,
    ),
    "run": ("run", "send one message and print the reply (scriptable)", True),
    "sessions": ("sessions", "list, show, clear, delete, export or import stored sessions", False),
    "plugins": (
        "plugins_cmd",
        "list installed plugins, their hooks, middleware order and sections, and plugins "
        "that failed to load",
        False,
    ),
    "demo": (
        "demo",
        "the offline demo: a tool call, an interrupt mid-tool, a resume in a new process",
        True,
    ),
}


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    for name, (module, help, common) in BUILTINS.items():
        register(name, help=help, module=f"{__package__}.{module}", common=common)
