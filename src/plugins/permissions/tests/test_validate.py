"""What comes in through the API and the options is checked strictly, with typed errors."""

from __future__ import annotations

import pytest
from hookagent_permissions.errors import (
    InvalidPermissionMode,
    InvalidPermissionOptions,
    InvalidPermissionRule,
    InvalidWorkingDirectory,
)
from hookagent_permissions.grammar import PATH_ARGUMENTS
from hookagent_permissions.options import parse_options
from hookagent_permissions.section import PermissionContext, PermissionRule, WorkingDirectory
from hookagent_permissions.validate import (
    check_context,
    check_mode,
    make_rule,
    make_working_directory,
)


def test_modes() -> None:
    assert check_mode("ACCEPT_EDITS") == "accept_edits"
    for bad in ("strict", "", 3, None):
        with pytest.raises(InvalidPermissionMode):
            check_mode(bad)


def test_rules() -> None:
    assert make_rule("shell", "DENY", " command:rm -rf ", "policy") == PermissionRule(
        "shell", "command:rm -rf", "deny", "policy"
    )
    assert make_rule("mcp__*", "ask").rule_content is None
    assert make_rule("t", "allow", "  ").rule_content is None


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("", "allow"), "tool_name"),
        (("a b", "allow"), "tool_name"),
        (("x" * 201, "allow"), "tool_name"),
        ((3, "allow"), "tool_name"),
        (("t", "maybe"), "behavior"),
        (("t", "allow", 3), "rule_content"),
        (("t", "allow", "path:../x"), "'..' is not allowed"),
        (("t", "allow", "arg:nope=1"), "JSON pointer"),
        (("t", "allow", "arg:nope"), "arg:POINTER=JSON"),
        (("t", "allow", None, 3), "source"),
        (("t", "allow", None, "s" * 201), "source"),
    ],
)
def test_bad_rules(args: tuple[object, ...], match: str) -> None:
    with pytest.raises(InvalidPermissionRule, match=match):
        make_rule(*args)


def test_working_directories() -> None:
    assert make_working_directory("/srv//app/") == WorkingDirectory("/srv/app", "session")
    for bad in ("relative", "/a/../b", "/a\x00", 3, ""):
        with pytest.raises(InvalidWorkingDirectory):
            make_working_directory(bad)


def test_check_context() -> None:
    pc = PermissionContext(mode="dontAsk", working_directories={"w": WorkingDirectory("/w/")})
    pc = pc.with_rule(PermissionRule("shell", "command:ls", "allow", "s"))
    pc = pc.with_rule(PermissionRule("shell", "/tmp/**", "passthrough", "cli"), "ask")
    out = check_context(pc)
    assert out.mode == "dont_ask" and out.working_directories["w"].path == "/w"
    assert out.ask_rules["shell"][0].behavior == "passthrough"
    with pytest.raises(InvalidPermissionRule, match="PermissionContext"):
        check_context({"mode": "default"})
    with pytest.raises(InvalidPermissionMode):
        check_context(PermissionContext(mode="nope"))
    wrong = PermissionContext(deny_rules={"t": (PermissionRule("t", None, "allow"),)})
    with pytest.raises(InvalidPermissionRule, match="in the deny rules"):
        check_context(wrong)
    bad = PermissionContext().with_rule(PermissionRule("t", "path:~/x", "deny"))
    with pytest.raises(InvalidPermissionRule, match="not expanded"):
        check_context(bad)


def test_options_seed() -> None:
    opts = parse_options(
        {
            "mode": "accept_edits",
            "rules": [
                {
                    "tool_name": "shell",
                    "behavior": "deny",
                    "rule_content": "command:rm -rf",
                    "source": "policy",
                },
                {"tool_name": "read_*", "behavior": "allow"},
            ],
            "working_directories": {"w": "/srv/app", "x": {"path": "/srv/x", "source": "ops"}},
            "path_arguments": ["target", "path"],
        }
    )
    assert opts.seed.mode == "accept_edits"
    assert opts.seed.deny_rules["shell"] == (
        PermissionRule("shell", "command:rm -rf", "deny", "policy"),
    )
    assert opts.seed.allow_rules["read_*"][0].source == "config"
    assert opts.seed.working_directories == {
        "w": WorkingDirectory("/srv/app", "config"),
        "x": WorkingDirectory("/srv/x", "ops"),
    }
    assert opts.path_arguments == (*PATH_ARGUMENTS, "target")
    assert parse_options({}).seed == PermissionContext() and parse_options({}).configured


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ([], "should be a mapping"),
        ({"modes": "default"}, "unknown key"),
        ({"mode": "strict"}, "unknown mode"),
        ({"rules": {}}, "list of rules"),
        ({"rules": ["x"]}, r"\['rules'\]\[0\] should be a mapping"),
        ({"rules": [{"tool_name": "t", "behavior": "allow", "pattern": "x"}]}, "unknown key"),
        ({"rules": [{"tool_name": "t", "behavior": "nope"}]}, r"\['rules'\]\[0\]: behavior"),
        ({"rules": [{"tool_name": "t", "behavior": "passthrough"}]}, "decides nothing"),
        ({"working_directories": ["/x"]}, "maps keys"),
        ({"working_directories": {"w": "rel"}}, "absolute"),
        ({"path_arguments": "target"}, "list of argument names"),
    ],
)
def test_bad_options(raw: object, match: str) -> None:
    with pytest.raises(InvalidPermissionOptions, match=match):
        parse_options(raw)
