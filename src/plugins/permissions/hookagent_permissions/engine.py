"""The decision engine: a slot's ``PermissionContext`` compiled once, asked once per tool call.

Precedence is fixed and does not depend on plugin or rule order: a matching **deny** rule
wins, then a matching **ask** rule, then a matching **allow** rule, then the mode decides
(``docs/permissions.md`` has the table). Within one kind the first matching rule (table
order) is the one named in the decision.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .grammar import PATH_ARGUMENTS, CallView, Content, parse_stored
from .section import MODES, Decision, PermissionContext, PermissionRule

FALLBACK_MODE = "dont_ask"
"""How an unknown stored mode decides: nothing is asked, nothing unlisted that writes runs."""


@attrs.frozen
class Verdict:
    """One decision, explained: what, why, which rule (None when the mode decided)."""

    decision: Decision
    reason: str
    mode: str
    rule: PermissionRule | None = None
    origin: str | None = None
    """Who decided when it was neither a rule nor the mode (``"user"``: an approval)."""

    @property
    def source(self) -> str:
        if self.origin is not None:
            return self.origin
        if self.rule is None:
            return "mode"
        return self.rule.source or "unknown"

    def event(self) -> dict[str, Any]:
        """The ``permission_decision`` run event's data (without the tool)."""
        return {
            "decision": self.decision,
            "rule": self.rule.describe() if self.rule else None,
            "behavior": self.rule.behavior if self.rule else None,
            "source": self.source,
            "mode": self.mode,
            "reason": self.reason,
        }


@attrs.frozen
class _Compiled:
    rule: PermissionRule
    key: str
    tool: re.Pattern[str]
    content: Content

    def names(self, tool: str, restrictive: bool) -> bool:
        """The rule is about ``tool``: its tool_name (a name or a glob) matches; a deny or
        ask rule filed under another key matches that key too (fail closed)."""
        if self.tool.fullmatch(tool):
            return True
        return (
            restrictive and self.key != self.rule.tool_name and fnmatch.fnmatchcase(tool, self.key)
        )


def _compile(rule: PermissionRule, key: str) -> _Compiled:
    tool = re.compile(fnmatch.translate(rule.tool_name), re.DOTALL)
    return _Compiled(rule, key, tool, parse_stored(rule.rule_content))


def _describe(rule: PermissionRule) -> str:
    return f"{rule.behavior} rule {rule.describe()} (source: {rule.source or 'unknown'})"


@attrs.frozen
class Engine:
    """A compiled context. Build with ``Engine.build(pc)``; ``decide`` is pure apart from
    reading the local filesystem to resolve path arguments."""

    context: PermissionContext
    mode: str
    deny: tuple[_Compiled, ...]
    ask: tuple[_Compiled, ...]
    allow: tuple[_Compiled, ...]
    directories: tuple[str, ...]
    path_arguments: tuple[str, ...] = PATH_ARGUMENTS
    problems: tuple[str, ...] = ()
    """Stored rules that do not parse (they fail closed); reported in events and ``show``."""
    _by_tool: dict[str, tuple[tuple[_Compiled, ...], ...]] = attrs.field(
        factory=dict, eq=False, repr=False
    )
    """(deny, ask, allow) rules naming each tool seen: the name globs are matched once."""

    @classmethod
    def build(cls, pc: PermissionContext, path_arguments: Sequence[str] = PATH_ARGUMENTS) -> Engine:
        tables: dict[str, list[_Compiled]] = {"deny": [], "ask": [], "allow": []}
        problems = []
        for _, key, rule in pc.rules():
            if rule.behavior == "passthrough":
                continue  # the reference's "no opinion": kept in the slot, never decides
            compiled = _compile(rule, key)
            problem = getattr(compiled.content, "problem", None)
            if problem:
                problems.append(f"{_describe(rule)}: {problem}")
            tables[rule.behavior].append(compiled)
        return cls(
            pc,
            pc.mode if pc.mode in MODES else FALLBACK_MODE,
            tuple(tables["deny"]),
            tuple(tables["ask"]),
            tuple(tables["allow"]),
            tuple(w.path for w in pc.working_directories.values()),
            tuple(path_arguments),
            tuple(problems),
        )

    def _for(self, tool: str) -> tuple[tuple[_Compiled, ...], ...]:
        found = self._by_tool.get(tool)
        if found is None:
            found = (
                tuple(c for c in self.deny if c.names(tool, True)),
                tuple(c for c in self.ask if c.names(tool, True)),
                tuple(c for c in self.allow if c.names(tool, False)),
            )
            if len(self._by_tool) < 1024:  # tool names are few; a flood is not cached
                self._by_tool[tool] = found
        return found

    @staticmethod
    def _first(
        rules: Sequence[_Compiled], call: CallView, restrictive: bool
    ) -> PermissionRule | None:
        for c in rules:
            if c.content.match(call, restrictive):
                return c.rule
        return None

    def decide(self, tool: str, read_only: bool, args: Mapping[str, Any]) -> Verdict:
        """ALLOW, DENY or ASK for one call of ``tool`` with ``args``."""
        call = CallView(args, self.directories, self.path_arguments)
        mode = self.mode
        shown = mode if mode == self.context.mode else f"{self.context.mode} (unknown: {mode})"
        deny, ask, allow = self._for(tool)
        rule = self._first(deny, call, restrictive=True)
        if rule is not None:
            return Verdict("deny", f"{_describe(rule)} matches", shown, rule)
        rule = self._first(ask, call, restrictive=True)
        if rule is not None:
            if mode == "bypass":
                return Verdict("allow", f"bypass mode: {_describe(rule)} is not asked", shown, rule)
            if mode == "dont_ask":
                return Verdict("deny", f"dont_ask mode: {_describe(rule)} would ask", shown, rule)
            if mode == "explore" and not read_only:
                return Verdict("deny", "explore mode allows read-only tools only", shown, rule)
            return Verdict("ask", f"{_describe(rule)} matches", shown, rule)
        rule = self._first(allow, call, restrictive=False)
        if rule is not None:
            if mode == "explore" and not read_only:
                return Verdict("deny", "explore mode allows read-only tools only", shown, rule)
            return Verdict("allow", f"{_describe(rule)} matches", shown, rule)
        return self._by_mode(mode, shown, read_only, call)

    @staticmethod
    def _by_mode(mode: str, shown: str, read_only: bool, call: CallView) -> Verdict:
        if read_only:
            return Verdict("allow", "a read-only tool, no rule", shown)
        if mode == "bypass":
            return Verdict("allow", "bypass mode, no rule", shown)
        if mode == "explore":
            return Verdict("deny", "explore mode allows read-only tools only", shown)
        if mode == "dont_ask":
            return Verdict("deny", "dont_ask mode: no rule allows this tool", shown)
        if mode == "accept_edits" and call.edits_inside():
            return Verdict(
                "allow", "accept_edits mode: an edit inside the working directories", shown
            )
        return Verdict("ask", f"{mode} mode: no rule allows this tool", shown)
