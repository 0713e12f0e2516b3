"""The ``permission_context`` section: the reference's fields, read from any shape it was saved in.

The reference (AgentScope) keeps ``mode``, ``working_directories {key: {path, source}}`` and three
tables ``allow_rules`` / ``deny_rules`` / ``ask_rules`` of tool name -> rules ``{tool_name,
rule_content, behavior, source}``. A slot saved by an older hookagent holds ``{"mode", "rules":
[{"tool", "decision", "pattern"}]}``; the Java reference writes camelCase keys and upper-case
modes. All of them are read here (never refused for their shape); what is written is the
reference's snake_case shape. Keys this module does not know are kept and written back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypeAlias

import attrs

from .errors import InvalidPermissionContext

SECTION = "permission_context"
Behavior: TypeAlias = Literal["allow", "deny", "ask", "passthrough"]
Decision: TypeAlias = Literal["allow", "deny", "ask"]
BEHAVIORS: tuple[Behavior, ...] = ("allow", "deny", "ask", "passthrough")
DECISIONS: tuple[Decision, ...] = ("deny", "ask", "allow")  # strictest first
MODES = ("default", "accept_edits", "explore", "bypass", "dont_ask")
_MODE_ALIASES = {
    "acceptedits": "accept_edits",
    "bypass_permissions": "bypass",
    "bypasspermissions": "bypass",
    "dontask": "dont_ask",
}
_TABLES: dict[Decision, str] = {"allow": "allow_rules", "deny": "deny_rules", "ask": "ask_rules"}
_CAMEL = {
    "workingDirectories": "working_directories",
    "allowRules": "allow_rules",
    "denyRules": "deny_rules",
    "askRules": "ask_rules",
    "toolName": "tool_name",
    "ruleContent": "rule_content",
}


def normalize_mode(mode: str) -> str:
    """``ACCEPT_EDITS``, ``acceptEdits`` and ``accept_edits`` are one mode; unknown ones stay
    as written (the engine decides them as ``dont_ask``: fail closed)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", mode.strip()).lower().replace("-", "_")
    return _MODE_ALIASES.get(snake, _MODE_ALIASES.get(snake.replace("_", ""), snake))


@attrs.frozen
class PermissionRule:
    """One rule: which tool (a name or a glob), which calls of it (``rule_content``, see
    ``grammar``; None: every call), what to do, and where the rule came from."""

    tool_name: str
    rule_content: str | None = None
    behavior: Behavior = "allow"
    source: str | None = None

    def describe(self) -> str:
        """``shell(command:rm -rf)`` or ``read_file``: how messages and events name it."""
        return f"{self.tool_name}({self.rule_content})" if self.rule_content else self.tool_name

    def to_json(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "rule_content": self.rule_content,
            "behavior": self.behavior,
            "source": self.source,
        }


@attrs.frozen
class WorkingDirectory:
    path: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "source": self.source}


@attrs.frozen
class PermissionContext:
    """The whole section. Frozen: a change is a new value (``evolve``), so a compiled engine
    cached for one value is never stale."""

    mode: str = "default"
    working_directories: Mapping[str, WorkingDirectory] = attrs.field(factory=dict)
    allow_rules: Mapping[str, tuple[PermissionRule, ...]] = attrs.field(factory=dict)
    deny_rules: Mapping[str, tuple[PermissionRule, ...]] = attrs.field(factory=dict)
    ask_rules: Mapping[str, tuple[PermissionRule, ...]] = attrs.field(factory=dict)
    extra: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    """Keys of the stored section this version does not know, written back unchanged."""

    def table(self, kind: Decision) -> Mapping[str, tuple[PermissionRule, ...]]:
        return {"allow": self.allow_rules, "deny": self.deny_rules, "ask": self.ask_rules}[kind]

    def rules(self) -> Iterator[tuple[Decision, str, PermissionRule]]:
        """(table kind, table key, rule) for every stored rule, deny first."""
        for kind in DECISIONS:
            for key, items in self.table(kind).items():
                for rule in items:
                    yield kind, key, rule

    def with_rule(self, rule: PermissionRule, table: Decision | None = None) -> PermissionContext:
        """This context plus ``rule`` in ``table`` (default: the table of its behavior; a
        passthrough rule needs one named). No duplicate is added."""
        kind: Decision = table or ("ask" if rule.behavior == "passthrough" else rule.behavior)
        rules = {k: tuple(v) for k, v in self.table(kind).items()}
        held = rules.get(rule.tool_name, ())
        if rule in held:
            return self
        rules[rule.tool_name] = (*held, rule)
        return self.replace_table(kind, rules)

    def replace_table(
        self, kind: Decision, table: Mapping[str, tuple[PermissionRule, ...]]
    ) -> PermissionContext:
        if kind == "allow":
            return attrs.evolve(self, allow_rules=table)
        if kind == "deny":
            return attrs.evolve(self, deny_rules=table)
        return attrs.evolve(self, ask_rules=table)

    def without_rule(
        self, tool_name: str, behavior: Decision, rule_content: str | None
    ) -> tuple[PermissionContext, list[PermissionRule]]:
        """This context minus every rule of ``behavior``'s table for ``tool_name`` with that
        content, and the rules removed."""
        removed: list[PermissionRule] = []
        table: dict[str, tuple[PermissionRule, ...]] = {}
        for key, items in self.table(behavior).items():
            kept = []
            for rule in items:
                if rule.tool_name == tool_name and (rule.rule_content or None) == rule_content:
                    removed.append(rule)
                else:
                    kept.append(rule)
            if kept:
                table[key] = tuple(kept)
        return self.replace_table(behavior, table), removed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        out["mode"] = self.mode
        out["working_directories"] = {k: w.to_json() for k, w in self.working_directories.items()}
        for kind in ("allow", "deny", "ask"):
            out[_TABLES[kind]] = {
                key: [r.to_json() for r in items] for key, items in self.table(kind).items()
            }
        return out


# --------------------------------------------------------------------------- reading


def _fail(where: str, what: str) -> InvalidPermissionContext:
    return InvalidPermissionContext(f"{SECTION}{where}: {what}")


def _opt_str(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _fail(where, f"should be a string or null, got {type(value).__name__}")


def _camel_to_snake(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {_CAMEL.get(k, k): v for k, v in obj.items()}


def _rule(obj: Any, key: str, kind: Decision, where: str) -> PermissionRule:
    if not isinstance(obj, dict):
        raise _fail(where, f"a rule should be an object, got {type(obj).__name__}")
    obj = _camel_to_snake(obj)
    name = obj.get("tool_name") or key
    if not isinstance(name, str) or not name:
        raise _fail(f"{where}.tool_name", "should name a tool")
    behavior = obj.get("behavior") or kind
    if not isinstance(behavior, str) or behavior.lower() not in BEHAVIORS:
        raise _fail(f"{where}.behavior", f"{behavior!r} is not one of {', '.join(BEHAVIORS)}")
    behavior = behavior.lower()
    if behavior != "passthrough" and DECISIONS.index(behavior) > DECISIONS.index(kind):
        behavior = kind  # a rule filed under a stricter table than it says: the stricter wins
    content = _opt_str(obj.get("rule_content"), f"{where}.rule_content")
    source = _opt_str(obj.get("source"), f"{where}.source")
    return PermissionRule(name, content or None, behavior, source)  # type: ignore[arg-type]


def _table(raw: Any, kind: Decision, where: str) -> dict[str, tuple[PermissionRule, ...]]:
    if raw is None:
        return {}
    if isinstance(raw, list):  # a flat list of rules, each naming its tool
        raw = {"": raw}
    if not isinstance(raw, dict):
        raise _fail(where, f"should map tool names to rule lists, got {type(raw).__name__}")
    table: dict[str, list[PermissionRule]] = {}
    for key, items in raw.items():
        if not isinstance(items, list):
            raise _fail(f"{where}.{key}", f"should be a list of rules, got {type(items).__name__}")
        for i, item in enumerate(items):
            rule = _rule(item, key, kind, f"{where}.{key}[{i}]")
            table.setdefault(key or rule.tool_name, []).append(rule)
    return {k: tuple(v) for k, v in table.items()}


def _legacy(rules: Any, where: str) -> list[PermissionRule]:
    """The old minimal shape's ``rules: [{"tool", "decision", "pattern"}]``."""
    if not isinstance(rules, list):
        raise _fail(where, f"should be a list, got {type(rules).__name__}")
    out = []
    for i, item in enumerate(rules):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise _fail(at, f"a rule should be an object, got {type(item).__name__}")
        tool, decision = item.get("tool"), item.get("decision")
        if not isinstance(tool, str) or not tool:
            raise _fail(f"{at}.tool", "should name a tool")
        if decision not in ("allow", "deny", "ask"):
            raise _fail(f"{at}.decision", f"{decision!r} is not one of allow, deny, ask")
        pattern = _opt_str(item.get("pattern"), f"{at}.pattern")
        out.append(PermissionRule(tool, pattern or None, decision, "legacy"))
    return out


def from_json(raw: Any) -> PermissionContext:
    """Read a stored section: the reference's shape, camelCase, or the old minimal one."""
    if raw is None:
        return PermissionContext()
    if not isinstance(raw, dict):
        raise _fail("", f"should be an object, got {type(raw).__name__}")
    doc = _camel_to_snake(raw)
    mode = doc.pop("mode", None) or "default"
    if not isinstance(mode, str):
        raise _fail(".mode", f"should be a string, got {type(mode).__name__}")
    dirs_raw = doc.pop("working_directories", None) or {}
    if not isinstance(dirs_raw, dict):
        raise _fail(".working_directories", "should map keys to {path, source}")
    dirs: dict[str, WorkingDirectory] = {}
    for key, entry in dirs_raw.items():
        at = f".working_directories.{key}"
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise _fail(at, "should be {path, source} with a string path")
        dirs[key] = WorkingDirectory(entry["path"], _opt_str(entry.get("source"), f"{at}.source"))
    tables = {
        kind: _table(doc.pop(_TABLES[kind], None), kind, f".{_TABLES[kind]}") for kind in _TABLES
    }
    pc = PermissionContext(
        normalize_mode(mode),
        dirs,
        tables["allow"],
        tables["deny"],
        tables["ask"],
    )
    legacy = doc.pop("rules", None)
    if legacy is not None:
        for rule in _legacy(legacy, ".rules"):
            pc = pc.with_rule(rule)
    return attrs.evolve(pc, extra=doc)
