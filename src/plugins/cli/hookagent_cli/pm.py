"""The CLI's plugin manager: the kernel's, plus the CLI hook specification before loading.

The kernel's manager makes the historic ``hookagent_add_hookspecs`` call when it is created,
so every plugin that adds hook specifications adds them as it is registered; the CLI adds its
own specification first (its plugin is registered last), and ``check_pending`` then validates
the implementations against them.
"""

from __future__ import annotations

import os

from hookagent.plugins import HookagentPluginManager, create_plugin_manager

from . import hookspecs
from . import plugin as cli_plugin


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def cli_plugin_manager(*, strict: bool | None = None) -> HookagentPluginManager:
    """``strict=None`` follows ``HOOKAGENT_STRICT_PLUGINS``; ``hookagent plugins`` passes False
    so that it can still report the plugin that fails."""
    blocked = [b.strip() for b in os.environ.get("HOOKAGENT_BLOCKED_PLUGINS", "").split(",")]
    blocked = [b for b in blocked if b]
    pm = create_plugin_manager(autoload=False, blocked=blocked)
    caller = getattr(pm.hook, "hookagent_register_cli_commands", None)
    if caller is None or caller.spec is None:
        pm.add_hookspecs(hookspecs)
    if not _flag("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD"):
        strict = _flag("HOOKAGENT_STRICT_PLUGINS") if strict is None else strict
        pm.load_entry_points(strict=strict, blocked=blocked)
    if not pm.is_registered(cli_plugin) and pm.get_plugin("cli") is None:
        pm.register(cli_plugin, name="cli")
    pm.check_pending()
    return pm
