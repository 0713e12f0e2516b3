"""Every mode x every rule kind x every kind of call, against the table in docs/permissions.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hookagent_permissions.engine import Engine
from hookagent_permissions.section import MODES, PermissionContext, PermissionRule, WorkingDirectory

DOC = Path(__file__).resolve().parents[4] / "docs" / "permissions.md"
CALLS = {
    "read-only": (True, {"text": "x"}),
    "not read-only": (False, {"text": "x"}),
    "an edit inside a working directory": (False, {"path": "notes.md"}),
}
RULES = ("deny rule", "ask rule", "allow rule", "no rule")


def doc_table() -> dict[tuple[str, str, str], str]:
    """(mode, call, rule column) -> decision, read from the page's decision table."""
    text = DOC.read_text()
    section = text.split("## The decision table", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        mode, call, *decisions = cells
        for rule, decision in zip(RULES, decisions, strict=True):
            table[(mode.strip("`"), call, rule)] = decision
    return table


TABLE = doc_table()


def test_the_table_covers_every_case() -> None:
    assert {(m, c, r) for m in MODES for c in CALLS for r in RULES} == set(TABLE)
    assert set(TABLE.values()) <= {"allow", "deny", "ask"}


def context(mode: str, rule: str, work: Path, content: str | None) -> PermissionContext:
    pc = PermissionContext(
        mode=mode, working_directories={"w": WorkingDirectory(str(work), "test")}
    )
    if rule != "no rule":
        behavior = rule.split()[0]
        pc = pc.with_rule(PermissionRule("tool_x", content, behavior, "test"))  # type: ignore[arg-type]
    return pc


@pytest.mark.parametrize("content", [None, "arg:/text=x"], ids=["tool-wide", "by-argument"])
@pytest.mark.parametrize("case", sorted(TABLE), ids=lambda c: "-".join(c).replace(" ", "_"))
def test_matrix(case: tuple[str, str, str], content: str | None, tmp_path: Path) -> None:
    mode, call, rule = case
    read_only, args = CALLS[call]
    if content is not None and "path" in args:
        content = "path:**"
    (tmp_path / "notes.md").write_text("n")
    verdict = Engine.build(context(mode, rule, tmp_path, content)).decide("tool_x", read_only, args)
    assert verdict.decision == TABLE[case], verdict.reason
    if rule != "no rule":
        assert verdict.rule is not None and verdict.source == "test"


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("rule", RULES)
def test_an_unknown_mode_decides_as_dont_ask(call: str, rule: str, tmp_path: Path) -> None:
    read_only, args = CALLS[call]
    (tmp_path / "notes.md").write_text("n")
    verdict = Engine.build(context("strict", rule, tmp_path, None)).decide(
        "tool_x", read_only, args
    )
    assert verdict.decision == TABLE[("dont_ask", call, rule)]
    assert verdict.mode == "strict (unknown: dont_ask)"


def test_a_rule_for_another_tool_is_no_rule(tmp_path: Path) -> None:
    pc = PermissionContext().with_rule(PermissionRule("other", None, "deny", "t"))
    assert Engine.build(pc).decide("tool_x", True, {}).decision == "allow"


def test_precedence_does_not_depend_on_rule_order() -> None:
    rules = [
        PermissionRule("shell", None, "allow", "a"),
        PermissionRule("shell", None, "ask", "b"),
        PermissionRule("shell", None, "deny", "c"),
    ]
    for order in (rules, rules[::-1], [rules[1], rules[2], rules[0]]):
        pc = PermissionContext()
        for r in order:
            pc = pc.with_rule(r)
        assert Engine.build(pc).decide("shell", False, {}).decision == "deny"
    pc = PermissionContext().with_rule(rules[0]).with_rule(rules[1])
    assert Engine.build(pc).decide("shell", False, {}).decision == "ask"


def test_tool_name_globs() -> None:
    pc = PermissionContext().with_rule(PermissionRule("mcp__github__*", None, "deny", "policy"))
    engine = Engine.build(pc)
    assert engine.decide("mcp__github__push", True, {}).decision == "deny"
    assert engine.decide("mcp__gitlab__push", True, {}).decision == "allow"
    assert engine.decide("xmcp__github__push", True, {}).decision == "allow"  # anchored


def test_a_deny_filed_under_another_key_matches_that_key_too() -> None:
    raw = {"deny_rules": {"shell": [{"tool_name": "sh", "behavior": "deny"}]}}
    from hookagent_permissions.section import from_json

    engine = Engine.build(from_json(raw))
    assert engine.decide("shell", True, {}).decision == "deny"
    assert engine.decide("sh", True, {}).decision == "deny"


def test_an_unusable_stored_rule_fails_closed() -> None:
    pc = (
        PermissionContext()
        .with_rule(PermissionRule("shell", "path:../x", "deny", "bad"))
        .with_rule(PermissionRule("read_file", "path:~/x", "allow", "bad"))
    )
    engine = Engine.build(pc)
    assert engine.decide("shell", True, {"command": "ls"}).decision == "deny"
    assert engine.decide("read_file", False, {"path": "/x"}).decision == "ask"  # not allowed
    assert len(engine.problems) == 2 and "'..' is not allowed" in engine.problems[0]


def test_passthrough_rules_never_decide() -> None:
    pc = PermissionContext().with_rule(PermissionRule("shell", None, "passthrough", "cli_arg"))
    assert Engine.build(pc).decide("shell", False, {}).decision == "ask"  # the mode's


def test_the_verdict_names_the_rule_and_its_source() -> None:
    pc = PermissionContext().with_rule(PermissionRule("shell", "command:rm -rf", "deny", "policy"))
    verdict = Engine.build(pc).decide("shell", False, {"command": "rm -rf /"})
    assert verdict.reason == "deny rule shell(command:rm -rf) (source: policy) matches"
    assert verdict.event() == {
        "decision": "deny",
        "rule": "shell(command:rm -rf)",
        "behavior": "deny",
        "source": "policy",
        "mode": "default",
        "reason": verdict.reason,
    }
    assert re.search("mode", Engine.build(PermissionContext()).decide("x", False, {}).source)
