"""Generated hostile paths: an allow rule never lets a path out of its working directory.

The oracle is the standard library's ``os.path.realpath`` (not our resolver), applied to both
readings a tool may give a path: as the OS walks it, and after ``os.path.normpath``.
"""

from __future__ import annotations

import os
from pathlib import Path

from hookagent_permissions.engine import Engine
from hookagent_permissions.section import PermissionContext, PermissionRule, WorkingDirectory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

COMPONENTS = [
    "..",
    ".",
    "",
    "src",
    "a.py",
    "notes.md",
    "link_out",
    "link_in",
    "loop",
    "up",
    "abs_out",
    "outside",
    "secret",
    "work",
    "work-evil",
    "w\u043erk",
    "\uff57ork",
    "WORK",
    "missing",
    "\u0430.py",
    "src\u200b",
    "n\u0303",
    "SRC",
    "..\u2024",
    "%2e%2e",
    "..\\..",
    "~",
]


def hostile(work: Path) -> st.SearchStrategy[str]:
    parts = st.lists(
        st.one_of(st.sampled_from(COMPONENTS), st.text(min_size=1, max_size=4)), max_size=8
    )
    prefixes = st.sampled_from(["", "/", str(work) + "/", str(work.parent) + "/", "//", "./"])
    return st.builds(lambda pre, ps: pre + "/".join(ps), prefixes, parts)


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


def oracle_readings(work: Path, value: str) -> list[str]:
    joined = value if value.startswith("/") else f"{work}/{value}"
    return [os.path.realpath(joined), os.path.realpath(os.path.normpath(joined))]


def engine(work: Path, mode: str = "dont_ask") -> Engine:
    pc = PermissionContext(mode=mode, working_directories={"w": WorkingDirectory(str(work))})
    return Engine.build(pc.with_rule(PermissionRule("write_file", "path:**", "allow", "test")))


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_an_allowed_path_is_inside_by_every_reading(tree: Path, data: st.DataObject) -> None:
    value = data.draw(hostile(tree))
    verdict = engine(tree).decide("write_file", False, {"path": value})
    if verdict.decision == "allow":
        assert "\x00" not in value
        for real in oracle_readings(tree, value):
            assert inside(real, str(tree)), (value, real)
    else:
        assert verdict.decision == "deny"  # dont_ask: what the rule does not allow is denied


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_accept_edits_never_lets_an_edit_out(tree: Path, data: st.DataObject) -> None:
    value = data.draw(hostile(tree))
    pc = PermissionContext(
        mode="accept_edits", working_directories={"w": WorkingDirectory(str(tree))}
    )
    verdict = Engine.build(pc).decide("write_file", False, {"path": value})
    if verdict.decision == "allow":
        for real in oracle_readings(tree, value):
            assert inside(real, str(tree)), (value, real)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_path_escaping_by_construction_is_denied(tree: Path, data: st.DataObject) -> None:
    """'..' past the root, a symlink out, an absolute path elsewhere, a look-alike sibling:
    followed by anything, never allowed."""
    escape = data.draw(
        st.sampled_from(
            [
                "../outside",
                "link_out",
                "abs_out",
                "up/outside",
                "/etc",
                "../work-evil",
                "../w\u043erk",
                "../\uff57ork",
                "missing/../link_out",
                "src/../../outside",
            ]
        )
    )
    rest = data.draw(st.lists(st.sampled_from(["secret", "x", ".", "a.py"]), max_size=3))
    value = "/".join([escape, *rest])
    assert engine(tree).decide("write_file", False, {"path": value}).decision == "deny"


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_deny_catches_every_path_that_reaches_its_directory(
    tree: Path, data: st.DataObject
) -> None:
    value = data.draw(hostile(tree))
    pc = PermissionContext(working_directories={"w": WorkingDirectory(str(tree))})
    pc = pc.with_rule(PermissionRule("write_file", "path:src/**", "deny", "policy"))
    verdict = Engine.build(pc).decide("write_file", False, {"path": value})
    src = str(tree / "src")
    if "\x00" in value:
        assert verdict.decision == "deny"  # unresolvable: caught
    elif any(inside(real, src) for real in oracle_readings(tree, value)):
        assert verdict.decision == "deny", value
