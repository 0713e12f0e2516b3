"""The allow-list rule and the validation of plugin_options["plan-mode"]."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent_plan_mode.errors import PlanModeOptionsError
from hookagent_plan_mode.options import (
    DEFAULT_ALLOWED,
    PLAN_TOOLS,
    PlanModeOptions,
    check_plan_path,
)


def test_read_only_tools_always_run() -> None:
    options = PlanModeOptions.parse(None)
    assert options.allows("read_file", True)
    assert options.allows("anything_at_all", True)


def test_tools_that_are_not_read_only_are_denied_unless_allow_listed() -> None:
    options = PlanModeOptions.parse({})
    assert not options.allows("write_file", False)
    assert not options.allows("bash", False)
    for name in (*PLAN_TOOLS, *DEFAULT_ALLOWED):
        assert options.allows(name, False), name
    assert {"todo_write", "task_requirement_propose"} <= set(DEFAULT_ALLOWED)


def test_an_unknown_tool_is_denied() -> None:
    options = PlanModeOptions.parse({})
    assert not options.allows("made_up_tool", None)
    # unless the application allow-listed that name (a subagent tool installed elsewhere)
    assert PlanModeOptions.parse({"also_allow": ["made_up_tool"]}).allows("made_up_tool", None)


def test_allow_tools_replaces_the_defaults_but_plan_tools_stay() -> None:
    options = PlanModeOptions.parse({"allow_tools": ["deploy_preview"]})
    assert options.allows("deploy_preview", False)
    assert not options.allows("todo_write", False)
    for name in PLAN_TOOLS:  # the way out of plan mode cannot be configured away
        assert options.allows(name, False)


def test_also_allow_extends_the_defaults() -> None:
    options = PlanModeOptions.parse({"also_allow": ["spawn_researcher"]})
    assert options.allows("spawn_researcher", False) and options.allows("todo_write", False)


def test_empty_allow_tools_leaves_only_plan_tools_and_read_only_ones() -> None:
    options = PlanModeOptions.parse({"allow_tools": []})
    assert options.allowed == PLAN_TOOLS


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("allow", "must be a mapping"),
        ({"allow": ["x"]}, "unknown option"),
        ({"allow_tools": "todo_write"}, "list of tool names"),
        ({"also_allow": [""]}, "non-empty strings"),
        ({"also_allow": [3]}, "non-empty strings"),
        ({"plan_file": "/etc/passwd"}, "relative POSIX path"),
        ({"plan_file": "../up.md"}, "relative POSIX path"),
        ({"plan_file": "a//b.md"}, "relative POSIX path"),
        ({"plan_file": "a\\b.md"}, "relative POSIX path"),
        ({"plan_file": "C:plan.md"}, "relative POSIX path"),
        ({"plan_file": ""}, "non-empty relative path"),
        ({"plan_file": 7}, "non-empty relative path"),
        ({"max_plan_chars": 0}, "max_plan_chars"),
        ({"max_plan_chars": True}, "max_plan_chars"),
        ({"max_plan_chars": "9"}, "max_plan_chars"),
        ({"banner": "  "}, "banner"),
    ],
)
def test_bad_options_are_refused_naming_the_option(raw: Any, match: str) -> None:
    with pytest.raises(PlanModeOptionsError, match=match):
        PlanModeOptions.parse(raw)


def test_good_options() -> None:
    options = PlanModeOptions.parse(
        {"plan_file": "plans/next.md", "max_plan_chars": 100, "banner": "Plan first."}
    )
    assert (options.plan_file, options.max_plan_chars, options.banner) == (
        "plans/next.md",
        100,
        "Plan first.",
    )


def test_check_plan_path_accepts_nested_relative_paths() -> None:
    assert check_plan_path("docs/plans/PLAN.md", "x") == "docs/plans/PLAN.md"
