"""Path bounds: what ``split_path`` accepts and what it refuses, before any filesystem call."""

from __future__ import annotations

import pytest
from hookagent_workspace import WorkspacePathError
from hookagent_workspace.paths import MAX_DEPTH, MAX_NAME_BYTES, MAX_PATH_CHARS, join, split_path
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("a", ("a",)),
        ("a/b.txt", ("a", "b.txt")),
        ("./a//b/", ("a", "b")),
        ("a/./b", ("a", "b")),
        (".hidden", (".hidden",)),
        ("...", ("...",)),
        ("..a/b..", ("..a", "b..")),
        ("~/x", ("~", "x")),
        ("[a]*?.md", ("[a]*?.md",)),
        ("caf\u00e9/\U0001f600", ("caf\u00e9", "\U0001f600")),
        ("C:", ("C:",)),
        ("a" * MAX_NAME_BYTES, ("a" * MAX_NAME_BYTES,)),
    ],
)
def test_accepted_paths_and_their_names(path: str, names: tuple[str, ...]) -> None:
    assert split_path(path) == names


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("//server/share", "absolute"),
        ("..", "'..'"),
        ("../x", "'..'"),
        ("a/../../b", "'..'"),
        ("a/..", "'..'"),
        ("a/b/../c", "'..'"),
        ("nul\x00.txt", "NUL"),
        ("line\nbreak", r"U\+000A"),
        ("esc\x1b[31m", r"U\+001B"),
        ("del\x7f", r"U\+007F"),
        ("a\\b", "backslash"),
        ("..\\..\\x", "backslash"),
        ("C:\\Windows", "backslash"),
        ("file:///etc/passwd", "URLs"),
        ("s3://bucket/key", "URLs"),
        ("simplecache::memory://x", "URLs"),
        ("\ud800", "Unicode"),
        ("x" * (MAX_NAME_BYTES + 1), "bytes"),
        ("\u00e9" * 128, "bytes"),
        ("/".join(["d"] * (MAX_DEPTH + 1)), "names"),
        ("a" * (MAX_PATH_CHARS + 1), "characters"),
        ("", "root"),
        (".", "root"),
        ("./", "root"),
    ],
)
def test_refused_paths_say_why(path: str, why: str) -> None:
    with pytest.raises(WorkspacePathError, match=why):
        split_path(path)


@pytest.mark.parametrize("value", [None, 3, b"a", ["a"], ("a",)])
def test_non_str_paths_are_refused(value: object) -> None:
    with pytest.raises(WorkspacePathError, match="must be a str"):
        split_path(value)


def test_the_root_is_accepted_only_where_asked() -> None:
    assert split_path("", allow_root=True) == ()
    assert split_path(".", allow_root=True) == ()
    with pytest.raises(WorkspacePathError, match=r"'\.\.'"):
        split_path("..", allow_root=True)


@given(st.text(max_size=80))
def test_whatever_is_accepted_stays_below_the_root(path: str) -> None:
    try:
        names = split_path(path, allow_root=True)
    except WorkspacePathError:
        return
    for name in names:
        assert name not in ("", ".", "..")
        assert "/" not in name and "\\" not in name and "\x00" not in name
        assert all(ord(c) >= 32 and ord(c) != 127 for c in name)
        assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    # canonical: the joined form splits back to the same names
    assert split_path(join(names), allow_root=True) == names


def test_a_str_subclass_is_checked_as_its_plain_text() -> None:
    class Sneaky(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    assert split_path(Sneaky("a/b")) == ("a", "b")
    with pytest.raises(WorkspacePathError, match=r"'\.\.'"):
        split_path(Sneaky("../x"))
