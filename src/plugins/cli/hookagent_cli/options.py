"""The options every subcommand shares, and turning them into an agent configuration."""

from __future__ import annotations

import argparse
import json
import os
import warnings
from collections.abc import Callable
from typing import Any

from hookagent import AgentConfig, StateNotPersistedWarning
from hookagent.errors import ConfigurationError, HookContractError, StoreConfigurationError
from hookagent.store.ids import check_id

from .gates import CliSessionGate
from .specs import load_plugins, load_tools

DEFAULT_USER = "local"
DEFAULT_SESSION = "default"
DEFAULT_AGENT_ID = "hookagent"


def add_common(parser: argparse.ArgumentParser) -> None:
    """``--store``, ``--model``, ``--model-option``, ``--user``, ``--session``, ``--agent-id``."""
    group = parser.add_argument_group("common options")
    group.add_argument(
        "--store",
        metavar="URL",
        default=os.environ.get("HOOKAGENT_STORE") or None,
        help="state store URL (file:///path, redis://..., postgresql+asyncpg://..., "
        "sqlite+aiosqlite:///...); default: $HOOKAGENT_STORE, else the configured default "
        "store (JSON files under $HOOKAGENT_STATE_HOME or ~/.hookagent/state)",
    )
    group.add_argument(
        "--session-log",
        metavar="URL",
        default=os.environ.get("HOOKAGENT_SESSION_LOG") or None,
        help="make this session log the state's authority (EVENT_LOG mode, needs "
        "hookagent-session-log): file:///path, redis://..., postgresql+asyncpg://...; "
        "default: $HOOKAGENT_SESSION_LOG; --store is then not consulted",
    )
    group.add_argument("--model", default="demo", help="model provider name (default: demo)")
    group.add_argument(
        "--model-option",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="an option for the model (repeatable); VALUE is JSON if it parses, else a string",
    )
    group.add_argument(
        "--demo-tools",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="offer the demo tools get_weather and slow_count (default: on with --model demo)",
    )
    group.add_argument(
        "--tool",
        metavar="MODULE:FUNCTION",
        action="append",
        default=[],
        help="offer this function as a tool (repeatable); the current directory is searched",
    )
    group.add_argument(
        "--plugin",
        metavar="MODULE[:NAME]",
        action="append",
        default=[],
        help="register this module (or an object in it) as a plugin, for this command only",
    )
    group.add_argument(
        "--preset",
        metavar="NAME",
        default=os.environ.get("HOOKAGENT_PRESET") or None,
        help="a configuration preset a plugin registered (hookagent-harness: 'harness'); "
        "default: $HOOKAGENT_PRESET, else none",
    )
    group.add_argument("--user", default=None, help=f"user id (default: {DEFAULT_USER})")
    group.add_argument("--session", default=None, help=f"session id (default: {DEFAULT_SESSION})")
    group.add_argument(
        "--agent-id", default=DEFAULT_AGENT_ID, help=f"agent id (default: {DEFAULT_AGENT_ID})"
    )
    group.add_argument("--traceback", action="store_true", help="show the traceback of an error")


def slot(args: argparse.Namespace) -> tuple[str, str]:
    """The (user_id, session_id) named on the command line, validated."""
    user = DEFAULT_USER if args.user is None else args.user
    session = DEFAULT_SESSION if args.session is None else args.session
    return check_id(user, "user_id", allow_empty=True), check_id(session, "session_id")


def model_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--model-option expects KEY=VALUE, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        options[key.strip()] = value
    return options


def build_config(args: argparse.Namespace, **overrides: Any) -> AgentConfig:
    """The agent configuration the options describe; refuses a store that would not persist."""
    from hookagent_model_demo import DEMO_TOOLS

    demo_tools = args.demo_tools if args.demo_tools is not None else args.model == "demo"
    extra_plugins = list(overrides.pop("plugins", ()))
    settings: dict[str, Any] = {
        "name": "hookagent-cli",
        "agent_id": check_id(args.agent_id, "agent_id"),
        "model": args.model,
        "model_options": model_options(args.model_option),
        "plugins": [*load_plugins(getattr(args, "plugin", [])), *extra_plugins],
        "state_store": args.store,
        "session_log": getattr(args, "session_log", None),
    }
    if "tools" not in overrides:  # sessions pass tools=(): they never import the user's
        settings["tools"] = [*(DEMO_TOOLS if demo_tools else ()), *load_tools(args.tool)]
    gate = CliSessionGate(settings["agent_id"])
    settings["session_gate"] = gate
    settings.update(overrides)
    name = getattr(args, "preset", None)
    if name:
        settings = preset(args, name)(settings)
    config = AgentConfig(**settings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StateNotPersistedWarning)
        gate.kernel = config.kernel  # binds plugins, model and store now, so errors show here
    persistent_log = config.session_log is not None and config.kernel.store_locality != "process"
    if not persistent_log and any(issubclass(w.category, StateNotPersistedWarning) for w in caught):
        raise StoreConfigurationError(
            "no store plugin provides a persistent default store (is hookagent-store-jsonfile "
            "installed?); pass --store URL, e.g. --store file:///tmp/hookagent-state"
        )
    return config


def presets(pm: Any) -> dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str, str]]:
    """name -> (apply, help, plugin) from every plugin's ``hookagent_register_cli_presets``."""
    found: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str, str]] = {}
    hook = getattr(pm.hook, "hookagent_register_cli_presets", None)
    if hook is None:
        return found
    for impl in reversed(hook.get_hookimpls()):
        plugin = impl.plugin_name

        def register(
            name: str,
            apply: Callable[[dict[str, Any]], dict[str, Any]],
            *,
            help: str = "",
            _plugin: str = plugin,
        ) -> None:
            if not isinstance(name, str) or not name or not callable(apply):
                raise HookContractError(f"plugin {_plugin!r}: bad CLI preset {name!r}")
            if name in found:
                raise HookContractError(
                    f"CLI preset {name!r} is registered twice: by {found[name][2]!r} and by "
                    f"{_plugin!r}"
                )
            found[name] = (apply, help, _plugin)

        others = [i.plugin for i in hook.get_hookimpls() if i is not impl]
        pm.subset_hook_caller("hookagent_register_cli_presets", remove_plugins=others)(
            register=register
        )
    return found


def preset(args: argparse.Namespace, name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The ``--preset`` named, from the plugins of this command line."""
    pm = getattr(args, "plugin_manager", None)
    if pm is None:
        from .pm import cli_plugin_manager

        pm = cli_plugin_manager()
    known = presets(pm)
    if name not in known:
        raise ConfigurationError(
            f"no plugin registers the preset {name!r} (known: {', '.join(sorted(known)) or 'none'}"
            "; hookagent-harness registers 'harness')"
        )
    return known[name][0]


def describe_store(config: AgentConfig, store: object) -> str:
    """Where the state lives, for humans: a directory for the file store, else the URL/type."""
    if isinstance(config.session_log, str):
        return f"session log {_redact(config.session_log)}"
    root = getattr(store, "root_path", None) or getattr(store, "root", None)
    if root is not None and not callable(root):
        return str(root)
    if isinstance(config.state_store, str):
        return _redact(config.state_store)
    return type(store).__name__


def _redact(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        creds, host = rest.split("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}" if ":" in creds else url
    return url
