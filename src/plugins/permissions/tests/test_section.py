"""The section: the reference's shape, camelCase, the old minimal shape; typed errors."""

from __future__ import annotations

import pytest
from hookagent_permissions.errors import InvalidPermissionContext
from hookagent_permissions.section import (
    PermissionContext,
    PermissionRule,
    WorkingDirectory,
    from_json,
    normalize_mode,
)

REFERENCE = {
    "mode": "accept_edits",
    "working_directories": {"workspace": {"path": "/home/alice/trips", "source": "session"}},
    "allow_rules": {
        "read_file": [
            {
                "tool_name": "read_file",
                "rule_content": "/home/alice/trips/**",
                "behavior": "allow",
                "source": "project_settings",
            }
        ]
    },
    "deny_rules": {
        "shell": [
            {
                "tool_name": "shell",
                "rule_content": "rm -rf *",
                "behavior": "deny",
                "source": "policy",
            }
        ]
    },
    "ask_rules": {
        "write_file": [
            {
                "tool_name": "write_file",
                "rule_content": "**/*.md",
                "behavior": "ask",
                "source": "user",
            },
            {
                "tool_name": "write_file",
                "rule_content": "/tmp/**",
                "behavior": "passthrough",
                "source": "cli_arg",
            },
        ]
    },
}


def test_the_reference_shape_round_trips() -> None:
    pc = from_json(REFERENCE)
    assert pc.mode == "accept_edits"
    assert pc.working_directories == {"workspace": WorkingDirectory("/home/alice/trips", "session")}
    assert pc.deny_rules["shell"] == (PermissionRule("shell", "rm -rf *", "deny", "policy"),)
    assert [r.behavior for r in pc.ask_rules["write_file"]] == ["ask", "passthrough"]
    assert pc.to_json() == REFERENCE
    assert from_json(pc.to_json()) == pc


def test_camel_case_and_upper_case_modes_from_the_java_reference() -> None:
    java = {
        "mode": "ACCEPT_EDITS",
        "workingDirectories": {"w": {"path": "/w", "source": "session"}},
        "denyRules": {
            "shell": [{"toolName": "shell", "ruleContent": "git push", "behavior": "DENY"}]
        },
    }
    pc = from_json(java)
    assert pc.mode == "accept_edits"
    assert pc.working_directories["w"].path == "/w"
    assert pc.deny_rules["shell"] == (PermissionRule("shell", "git push", "deny", None),)


@pytest.mark.parametrize(
    ("given", "mode"),
    [
        ("default", "default"),
        ("ACCEPT_EDITS", "accept_edits"),
        ("acceptEdits", "accept_edits"),
        ("bypassPermissions", "bypass"),
        ("dontAsk", "dont_ask"),
        ("DONT_ASK", "dont_ask"),
        ("explore", "explore"),
        ("strict", "strict"),  # unknown: kept as written, decided as dont_ask (test_matrix)
    ],
)
def test_modes_are_read_in_any_spelling(given: str, mode: str) -> None:
    assert normalize_mode(given) == mode


def test_the_old_minimal_shape_is_upcast() -> None:
    old = {
        "mode": "default",
        "rules": [
            {"tool": "shell", "decision": "ask", "pattern": "rm *"},
            {"tool": "read_file", "decision": "allow", "pattern": None},
            {"tool": "deploy", "decision": "deny"},
        ],
    }
    pc = from_json(old)
    assert pc.ask_rules == {"shell": (PermissionRule("shell", "rm *", "ask", "legacy"),)}
    assert pc.allow_rules == {"read_file": (PermissionRule("read_file", None, "allow", "legacy"),)}
    assert pc.deny_rules == {"deploy": (PermissionRule("deploy", None, "deny", "legacy"),)}
    assert "rules" not in pc.to_json()  # written back in the reference's shape


def test_a_rule_under_a_stricter_table_than_it_says_takes_the_stricter() -> None:
    pc = from_json({"deny_rules": {"shell": [{"tool_name": "shell", "behavior": "allow"}]}})
    assert pc.deny_rules["shell"][0].behavior == "deny"
    pc = from_json({"allow_rules": {"shell": [{"tool_name": "shell", "behavior": "deny"}]}})
    assert pc.allow_rules["shell"][0].behavior == "deny"  # the rule's own, stricter word


def test_unknown_keys_are_kept() -> None:
    raw = {"mode": "default", "additional_note": {"x": 1}}
    assert from_json(raw).to_json()["additional_note"] == {"x": 1}


def test_absent_section_is_the_default() -> None:
    assert from_json(None) == PermissionContext()


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ([], "permission_context: should be an object"),
        ({"mode": 3}, "permission_context.mode"),
        ({"allow_rules": "x"}, "permission_context.allow_rules"),
        ({"allow_rules": {"t": "x"}}, "permission_context.allow_rules.t"),
        ({"allow_rules": {"t": [3]}}, "permission_context.allow_rules.t[0]"),
        (
            {"deny_rules": {"t": [{"behavior": "maybe"}]}},
            "permission_context.deny_rules.t[0].behavior",
        ),
        (
            {"ask_rules": {"t": [{"rule_content": 5}]}},
            "permission_context.ask_rules.t[0].rule_content",
        ),
        ({"working_directories": {"w": {"path": 1}}}, "permission_context.working_directories.w"),
        ({"rules": [{"tool": "t", "decision": "perhaps"}]}, "permission_context.rules[0].decision"),
    ],
)
def test_a_section_that_does_not_fit_names_the_field(raw: object, where: str) -> None:
    with pytest.raises(
        InvalidPermissionContext, match=where.replace("[", r"\[").replace("]", r"\]")
    ):
        from_json(raw)


def test_with_and_without_rule() -> None:
    rule = PermissionRule("shell", "git status", "allow", "session")
    pc = PermissionContext().with_rule(rule)
    assert pc.allow_rules == {"shell": (rule,)}
    assert pc.with_rule(rule) is pc  # no duplicate
    pc2, removed = pc.without_rule("shell", "allow", "git status")
    assert removed == [rule] and pc2.allow_rules == {}
    _, none = pc.without_rule("shell", "allow", "git log")
    assert none == []
