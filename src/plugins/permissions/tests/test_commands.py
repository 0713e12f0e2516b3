"""Command rules: strict for allow, wide for deny and ask."""

from __future__ import annotations

import pytest
from hookagent_permissions.commands import CommandPattern, command_of
from hookagent_permissions.errors import InvalidPermissionRule
from hookagent_permissions.grammar import CommandContent, parse


def allows(pattern: str, command: str) -> bool:
    return CommandPattern.compile(pattern).allows(command)


def catches(pattern: str, command: str) -> bool:
    return CommandPattern.compile(pattern).catches(command)


@pytest.mark.parametrize(
    ("pattern", "command", "expected"),
    [
        ("git status", "git status", True),
        ("git status", "git status --short", True),  # a prefix at a word boundary
        ("git status", "git statusx", False),
        ("git status", "git  status", True),  # runs of spaces count as one
        ("git status", "  git status  ", True),
        ("git", "gitk", False),
        ("npm run test:*", "npm run test", True),  # the legacy ':*' suffix is ' *'
        ("npm run test:*", "npm run test --watch", True),
        ("npm run test*", "npm run tests", True),  # a star inside a word
        ("rm -rf *", "rm -rf", True),  # a trailing ' *' also matches nothing more
        ("git push * --dry-run", "git push origin --dry-run", True),
        ("git push * --dry-run", "git push origin --dry-run --force", False),  # anchored at the end
        (r"echo \*", "echo *", True),
        (r"echo \*", "echo x", False),
        ("/usr/bin/make", "/usr/bin/make all", True),
    ],
)
def test_allow_reads_the_command_as_written(pattern: str, command: str, expected: bool) -> None:
    assert allows(pattern, command) is expected


@pytest.mark.parametrize(
    "command",
    [
        "git status; rm -rf /",
        "git status && rm -rf /",
        "git status || true",
        "git status | sh",
        "git status & rm x",
        "git status `rm x`",
        "git status $(rm x)",
        "git status > /etc/passwd",
        "git status < /dev/zero",
        "git status\nrm -rf /",
        "git status\rrm",
        "git status ${IFS}",
        "git status \\; rm",
        "git status (x)",
        "git status {x}",
        'git status "a;b"',  # quoted or not: shell syntax is never read through
        "git status\u00a0--short",  # a non-ASCII space
        "git status\x00",
        "git status\u2028rm",
    ],
)
def test_allow_never_looks_through_shell_syntax(command: str) -> None:
    assert not allows("git status", command)


def test_allow_does_not_fold_look_alikes() -> None:
    assert not allows("git status", "\uff47it status")  # fullwidth g
    assert not allows("git status", "Git status")
    assert not allows("git status", "g\u0456t status")  # a Cyrillic i


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "sudo rm -rf /",
        "X=1 rm -rf /",
        "env X=1 rm -rf /",
        "/bin/rm -rf /",
        "echo ok; rm -rf /",
        "echo ok && rm -rf /",
        "true|rm -rf /",
        "echo $(rm -rf /)",
        "echo `rm -rf /`",
        "r'm' -rf /",
        'r"m" -rf /',
        "r\\m -rf /",
        "rm${IFS}-rf /",
        "rm  -rf   /",
        "rm\t-rf /",
        "RM -RF /",
        "\uff52\uff4d -rf /",  # fullwidth: NFKC folds it
        "(rm -rf /)",
        "{ rm -rf /; }",
        "echo rm -rf",  # harmless, but deny errs on the side of denying
    ],
)
def test_deny_catches_the_command_however_it_is_spelled(command: str) -> None:
    assert catches("rm -rf", command)


@pytest.mark.parametrize("command", ["rm -r /tmp/x", "rmdir x", "ls -rf", "echo rm"])
def test_deny_does_not_catch_other_commands(command: str) -> None:
    assert not catches("rm -rf", command)


def test_an_overlong_command_is_caught_not_read() -> None:
    assert catches("rm -rf", "echo " + "a " * 60_000)


def test_the_command_argument() -> None:
    assert command_of({"command": "ls"}) == "ls"
    assert command_of({"cmd": ["git", "status"]}) == "git status"
    assert command_of({"command": 3}) is None
    assert command_of({"command": ["git", 3]}) is None
    assert command_of({"other": "ls"}) is None


def test_a_call_without_a_command_fails_closed() -> None:
    from hookagent_permissions.grammar import CallView

    content = parse("command:rm -rf")
    assert isinstance(content, CommandContent)
    call = CallView({"path": "x"})
    assert content.match(call, restrictive=True)  # deny / ask: cannot tell, so it matches
    assert not content.match(call, restrictive=False)  # allow: cannot tell, so it does not


@pytest.mark.parametrize("bad", ["command:", "command:   ", "command:a\x01b"])
def test_bad_command_patterns_are_typed_errors(bad: str) -> None:
    with pytest.raises(InvalidPermissionRule, match="rule_content"):
        parse(bad)
