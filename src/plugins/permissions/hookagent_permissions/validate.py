"""Checks for what a person or a configuration gives us (the admin API, the CLI, options).

Stored data is read leniently (``section``: a bad rule fails closed, never blocks a load);
what comes in through the API is checked strictly, before anything is stored, and refused
with a typed error that says what is wrong.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from .errors import InvalidPermissionMode, InvalidPermissionRule, InvalidWorkingDirectory
from .grammar import parse
from .section import (
    BEHAVIORS,
    MODES,
    PermissionContext,
    PermissionRule,
    WorkingDirectory,
    normalize_mode,
)

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.*?\[\]!-]{1,200}$")
MAX_SOURCE = 200
MAX_CONTENT = 4096
MAX_RULES = 1000
"""Rules one slot may hold: the section is read on every call and saved with the slot."""


def check_mode(mode: object) -> str:
    """The mode's canonical name; ``InvalidPermissionMode`` for anything else."""
    if not isinstance(mode, str):
        raise InvalidPermissionMode(f"a mode is a string, got {type(mode).__name__}")
    canonical = normalize_mode(mode)
    if canonical not in MODES:
        raise InvalidPermissionMode(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    return canonical


def make_rule(
    tool_name: object,
    behavior: object,
    rule_content: object = None,
    source: object = "session",
) -> PermissionRule:
    """A checked rule: a tool name or glob, a behavior, a rule_content that parses."""
    if not isinstance(tool_name, str) or not _TOOL_NAME.match(tool_name):
        raise InvalidPermissionRule(
            f"tool_name {tool_name!r}: a tool name or a glob of letters, digits, '_.-' and "
            "'*?[]!' (1..200 characters)"
        )
    if not isinstance(behavior, str) or behavior.lower() not in BEHAVIORS:
        raise InvalidPermissionRule(
            f"behavior {behavior!r}: expected one of {', '.join(BEHAVIORS)}"
        )
    if rule_content is not None and not isinstance(rule_content, str):
        raise InvalidPermissionRule(
            f"rule_content should be a string or None, got {type(rule_content).__name__}"
        )
    if isinstance(rule_content, str) and len(rule_content) > MAX_CONTENT:
        raise InvalidPermissionRule(f"rule_content is longer than {MAX_CONTENT} characters")
    parse(rule_content)  # raises InvalidPermissionRule naming the problem
    if source is not None and (not isinstance(source, str) or len(source) > MAX_SOURCE):
        raise InvalidPermissionRule(f"source should be a string of at most {MAX_SOURCE} characters")
    content = rule_content.strip() if isinstance(rule_content, str) else None
    return PermissionRule(tool_name, content or None, behavior.lower(), source)  # type: ignore[arg-type]


def make_working_directory(path: object, source: object = "session") -> WorkingDirectory:
    """An absolute, clean POSIX path (symlinks are resolved at decision time, not here)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidWorkingDirectory(f"a working directory is an absolute path, got {path!r}")
    if "\x00" in path or any(ord(c) < 32 for c in path) or ".." in path.split("/"):
        raise InvalidWorkingDirectory(
            f"working directory {path!r}: no control characters and no '..' components"
        )
    if source is not None and not isinstance(source, str):
        raise InvalidWorkingDirectory("a working directory's source is a string or None")
    clean = posixpath.normpath(path)
    return WorkingDirectory("/" + clean.lstrip("/"), source)


def check_context(pc: Any) -> PermissionContext:
    """A whole context given to ``replace_permission_context``: every part checked."""
    if not isinstance(pc, PermissionContext):
        raise InvalidPermissionRule(
            f"replace_permission_context takes a PermissionContext, got {type(pc).__name__} "
            "(read stored JSON with hookagent_permissions.section.from_json)"
        )
    out = PermissionContext(check_mode(pc.mode), extra=dict(pc.extra))
    dirs = {}
    for key, wd in pc.working_directories.items():
        if not isinstance(key, str) or not key:
            raise InvalidWorkingDirectory(
                f"a working directory's key is a non-empty string, got {key!r}"
            )
        dirs[key] = make_working_directory(wd.path, wd.source)
    out = PermissionContext(out.mode, dirs, extra=out.extra)
    if sum(1 for _ in pc.rules()) > MAX_RULES:
        raise InvalidPermissionRule(f"a slot holds at most {MAX_RULES} rules")
    for kind, _, rule in pc.rules():
        checked = make_rule(rule.tool_name, rule.behavior, rule.rule_content, rule.source)
        if checked.behavior not in (kind, "passthrough"):
            raise InvalidPermissionRule(
                f"rule {checked.describe()} says {checked.behavior!r} but is in the {kind} rules"
            )
        out = out.with_rule(checked, kind)
    return out


def check_room(pc: PermissionContext) -> None:
    """Refuse one more rule in a slot that holds ``MAX_RULES`` already."""
    if sum(1 for _ in pc.rules()) >= MAX_RULES:
        raise InvalidPermissionRule(
            f"the slot holds {MAX_RULES} rules already; remove some (or replace the context)"
        )
