"""``AgentConfig(plugin_options={"permissions": {...}})``: the defaults that seed new slots.

::

    {"mode": "default",
     "rules": [{"tool_name": "shell", "behavior": "deny", "rule_content": "command:rm -rf",
                "source": "policy"}],
     "working_directories": {"workspace": "/srv/app"},      # or {"path": ..., "source": ...}
     "path_arguments": ["target"]}                          # added to the built-in names

Naming the plugin here (even with ``{}``) switches it on for the configuration's slots; a
slot that holds a ``permission_context`` section is decided by it in any configuration.
A slot with no ``permission_context`` section starts from these (they are written into the
slot with its first save); after that the slot's own section is what decides, and a later
change of the configuration does not reach it (``replace_permission_context`` does).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import attrs

from .errors import InvalidPermissionOptions, PermissionsError
from .grammar import PATH_ARGUMENTS
from .section import PermissionContext
from .validate import check_mode, make_rule, make_working_directory

PLUGIN = "permissions"
_KEYS = ("mode", "rules", "working_directories", "path_arguments")


@attrs.frozen
class Options:
    seed: PermissionContext = attrs.field(factory=PermissionContext)
    path_arguments: tuple[str, ...] = PATH_ARGUMENTS
    configured: bool = False
    """Options were given: new slots are seeded with ``seed`` (else nothing is written)."""


_parsed: weakref.WeakKeyDictionary[Any, Options] = weakref.WeakKeyDictionary()


def options_for(kernel: Any) -> Options:
    """A configuration's checked options, parsed once per prepared configuration (its
    kernel): rules are compiled once, not per call."""
    found = _parsed.get(kernel)
    if found is None:
        raw = kernel.config.plugin_options
        found = parse_options(raw[PLUGIN]) if PLUGIN in raw else Options()
        _parsed[kernel] = found
    return found


def parse_options(raw: object) -> Options:
    """Checked options; ``InvalidPermissionOptions`` names the key that is wrong."""
    if not isinstance(raw, Mapping):
        raise InvalidPermissionOptions(
            f"plugin_options[{PLUGIN!r}] should be a mapping, got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise InvalidPermissionOptions(
            f"plugin_options[{PLUGIN!r}]: unknown key(s) {unknown}; known: {', '.join(_KEYS)}"
        )
    try:
        return _parse(raw)
    except InvalidPermissionOptions:
        raise
    except PermissionsError as exc:
        raise InvalidPermissionOptions(f"plugin_options[{PLUGIN!r}]: {exc}") from None


def _parse(raw: Mapping[str, Any]) -> Options:
    pc = PermissionContext(mode=check_mode(raw.get("mode", "default")))
    dirs = raw.get("working_directories", {})
    if not isinstance(dirs, Mapping):
        raise InvalidPermissionOptions(
            f"plugin_options[{PLUGIN!r}]['working_directories'] maps keys to paths"
        )
    checked = {}
    for key, entry in dirs.items():
        path, source = (entry, "config") if isinstance(entry, str) else (None, None)
        if isinstance(entry, Mapping):
            path, source = entry.get("path"), entry.get("source", "config")
        checked[str(key)] = make_working_directory(path, source)
    pc = attrs.evolve(pc, working_directories=checked)
    rules = raw.get("rules", [])
    if not isinstance(rules, list):
        raise InvalidPermissionOptions(f"plugin_options[{PLUGIN!r}]['rules'] is a list of rules")
    for i, item in enumerate(rules):
        if not isinstance(item, Mapping):
            raise InvalidPermissionOptions(
                f"plugin_options[{PLUGIN!r}]['rules'][{i}] should be a mapping"
            )
        extra = sorted(set(item) - {"tool_name", "behavior", "rule_content", "source"})
        if extra:
            raise InvalidPermissionOptions(
                f"plugin_options[{PLUGIN!r}]['rules'][{i}]: unknown key(s) {extra}"
            )
        try:
            rule = make_rule(
                item.get("tool_name"),
                item.get("behavior"),
                item.get("rule_content"),
                item.get("source", "config"),
            )
        except PermissionsError as exc:
            raise InvalidPermissionOptions(
                f"plugin_options[{PLUGIN!r}]['rules'][{i}]: {exc}"
            ) from None
        if rule.behavior == "passthrough":
            raise InvalidPermissionOptions(
                f"plugin_options[{PLUGIN!r}]['rules'][{i}]: a passthrough rule decides nothing"
            )
        pc = pc.with_rule(rule)
    names = raw.get("path_arguments", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise InvalidPermissionOptions(
            f"plugin_options[{PLUGIN!r}]['path_arguments'] is a list of argument names"
        )
    extra_names = tuple(n for n in names if n not in PATH_ARGUMENTS)
    return Options(pc, PATH_ARGUMENTS + extra_names, configured=True)
