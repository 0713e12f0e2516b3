"""JSON-pointer rules on an argument: equality and globs, fail closed on what is missing."""

from __future__ import annotations

import pytest
from hookagent_permissions.errors import InvalidPermissionRule
from hookagent_permissions.grammar import ArgContent, CallView, parse


def check(content: str, args: dict[str, object], restrictive: bool) -> bool:
    return parse(content).match(CallView(args), restrictive)


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        ("arg:/env=prod", {"env": "prod"}, True),
        ("arg:/env=prod", {"env": "staging"}, False),
        ('arg:/env="prod"', {"env": "prod"}, True),
        ("arg:/n=3", {"n": 3}, True),
        ("arg:/n=3", {"n": 3.0}, True),
        ("arg:/n=3", {"n": "3"}, False),
        ("arg:/force=true", {"force": True}, True),
        ("arg:/force=true", {"force": 1}, False),  # JSON: true is not 1
        ("arg:/n=1", {"n": True}, False),
        ("arg:/opts/mode=fast", {"opts": {"mode": "fast"}}, True),
        ("arg:/items/1=b", {"items": ["a", "b"]}, True),
        ("arg:/items/01=b", {"items": ["a", "b"]}, False),  # not an index: missing
        ("arg:/a~1b=x", {"a/b": "x"}, True),  # RFC 6901 escapes
        ("arg:/a~0b=x", {"a~b": "x"}, True),
        ('arg:/tags=["a","b"]', {"tags": ["a", "b"]}, True),
        ("arg:/branch=~release-*", {"branch": "release-1.2"}, True),
        ("arg:/branch=~release-*", {"branch": "main"}, False),
        ("arg:/url=~https://*.example.com/*", {"url": "https://api.example.com/x/y"}, True),
    ],
)
def test_allow_side(content: str, args: dict[str, object], expected: bool) -> None:
    assert check(content, args, restrictive=False) is expected


@pytest.mark.parametrize(
    ("content", "args"),
    [
        ("arg:/env=prod", {}),  # missing: a deny cannot tell, so it matches
        ("arg:/env=prod", {"env": "PROD"}),  # folded
        ("arg:/env=prod", {"env": "\uff50rod"}),  # fullwidth
        ("arg:/opts/mode=fast", {"opts": "x"}),  # not an object on the way
        ("arg:/branch=~release-*", {"branch": 3}),  # not a string for a glob
        ("arg:/branch=~release-*", {"branch": "RELEASE-1"}),
    ],
)
def test_restrictive_side_matches_what_it_cannot_rule_out(
    content: str, args: dict[str, object]
) -> None:
    assert check(content, args, restrictive=True)
    assert not check(content, args, restrictive=False)


def test_restrictive_side_lets_other_values_through() -> None:
    assert not check("arg:/env=prod", {"env": "staging"}, restrictive=True)
    assert not check("arg:/branch=~release-*", {"branch": "main"}, restrictive=True)


def test_a_value_that_is_not_json_is_a_string() -> None:
    content = parse("arg:/who=ann lee")
    assert isinstance(content, ArgContent) and content.equals == "ann lee"


@pytest.mark.parametrize("bad", ["arg:env=prod", "arg:/env", "arg:/a~2=x", "arg:/a=~"])
def test_bad_pointers_are_typed_errors(bad: str) -> None:
    with pytest.raises(InvalidPermissionRule):
        parse(bad)
