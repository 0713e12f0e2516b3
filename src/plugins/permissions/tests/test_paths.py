"""Path rules: every reading inside for allow, any reading for deny; symlinks on the real FS."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookagent_permissions.errors import InvalidPermissionRule
from hookagent_permissions.grammar import CallView, PathContent, parse
from hookagent_permissions.paths import PathGlob, readings, realpath


def allowed(glob: str, work: Path, value: object, name: str = "path") -> bool:
    content = parse(f"path:{glob}")
    return content.match(CallView({name: value}, [str(work)]), restrictive=False)


def caught(glob: str, work: Path | None, value: object) -> bool:
    content = parse(f"path:{glob}")
    return content.match(CallView({"path": value}, [str(work)] if work else []), restrictive=True)


@pytest.mark.parametrize(
    "value", ["src/a.py", "notes.md", "link_in/a.py", "./src/../src/a.py", "new/file.txt", "."]
)
def test_allow_inside_the_working_directory(work: Path, value: str) -> None:
    assert allowed("**", work, value)


def test_allow_an_absolute_path_inside(work: Path) -> None:
    assert allowed("**", work, str(work / "src" / "a.py"))


@pytest.mark.parametrize(
    "value",
    [
        "../outside/secret",
        "src/../../outside/secret",
        "link_out/secret",  # a symlink out of the working directory
        "abs_out",  # an absolute symlink out
        "up/outside/secret",  # a symlink to the parent
        "missing/../link_out/secret",  # a missing component does not hide the symlink after it
        "loop/x",  # a symlink loop: unresolvable
        "../work-evil/x",  # a sibling with the same prefix
        "../w\u043erk/x",  # a look-alike directory (a Cyrillic o)
        "/etc/passwd",
        "//etc/passwd",
        "",
        "src/a\x00.py",
        "src/a\n.py",
    ],
)
def test_allow_never_reaches_outside(work: Path, value: str) -> None:
    assert not allowed("**", work, value)


def test_allow_refuses_look_alikes_of_the_working_directory(work: Path) -> None:
    root = work.parent
    for lookalike in ("w\u043erk", "\uff57ork", "WORK", "work-evil"):
        assert not allowed("**", work, str(root / lookalike / "x"))


def test_allow_needs_every_path_argument_inside(work: Path) -> None:
    assert allowed("**", work, ["src/a.py", "notes.md"], name="paths")
    assert not allowed("**", work, ["src/a.py", "../outside/secret"], name="paths")
    assert not allowed("**", work, ["src/a.py", 3], name="paths")
    assert not allowed("**", work, [], name="paths")


def test_allow_without_a_working_directory_matches_nothing(work: Path) -> None:
    content = parse("path:**")
    assert not content.match(CallView({"path": "src/a.py"}, []), restrictive=False)
    # an absolute glob still needs the path inside a working directory
    content = parse(f"path:{work}/**")
    assert not content.match(CallView({"path": str(work / "notes.md")}, []), restrictive=False)
    assert content.match(CallView({"path": str(work / "notes.md")}, [str(work)]), restrictive=False)


def test_allow_globs_relative_to_the_working_directory(work: Path) -> None:
    assert allowed("src/**", work, "src/a.py")
    assert allowed("src/**", work, "link_in/a.py")  # what it really is
    assert not allowed("src/**", work, "notes.md")
    assert allowed("*.md", work, "notes.md")
    assert not allowed("*.md", work, "docs/x.md")  # '*' stays within one component
    assert allowed("**/*.md", work, "docs/deep/x.md")
    assert allowed("**/*.md", work, "notes.md")  # '**' spans zero components too
    assert allowed("src/", work, "src/x/y")  # a trailing '/': the directory and all below
    assert allowed("src/[ab].py", work, "src/a.py")
    assert not allowed("src/[!a].py", work, "src/a.py")
    assert allowed("src/?.py", work, "src/a.py")


def test_a_second_working_directory(work: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    content = parse("path:**")
    call = CallView({"path": str(other / "x")}, [str(work), str(other)])
    assert content.match(call, restrictive=False)
    # a relative path starts at the first working directory
    call = CallView({"path": "x"}, [str(work), str(other)])
    assert call.paths is not None and call.paths[0] is not None
    assert call.paths[0].real == (str(work / "x"),)


def test_an_unusable_working_directory_is_skipped(work: Path) -> None:
    assert CallView({}, ["relative/dir", "/a\x00b", str(work)]).roots == (str(work),)


@pytest.mark.parametrize(
    "value",
    ["src/a.py", "link_in/a.py", "./src/../src/a.py", "SRC/a.py", "\uff53rc/a.py", "src//a.py"],
)
def test_deny_catches_any_reading(work: Path, value: str) -> None:
    assert caught("src/**", work, value)


@pytest.mark.parametrize("value", ["", "loop/x", "a\x00b", 7, None])
def test_deny_catches_what_cannot_be_resolved(work: Path, value: object) -> None:
    assert caught("src/**", work, value)


def test_deny_catches_a_relative_path_with_no_working_directory() -> None:
    assert caught("/etc/**", None, "notes.md")


def test_deny_catches_through_symlinks_and_dots(work: Path) -> None:
    outside = str(work.parent / "outside")
    assert caught(f"{outside}/**", work, "link_out/secret")
    assert caught(f"{outside}/**", work, "abs_out")
    assert caught(f"{outside}/**", work, "../outside/secret")
    assert caught(f"{outside}/**", work, f"{work}/../outside/secret")
    assert not caught(f"{outside}/**", work, "src/a.py")


def test_deny_relative_globs_also_read_from_the_root(work: Path) -> None:
    assert caught("**/*.env", work, "/etc/app.env")
    assert not caught("**/*.env", work, "/etc/app.conf")


def test_a_call_without_path_arguments(work: Path) -> None:
    content = parse("path:**")
    assert content.match(CallView({"text": "x"}, [str(work)]), restrictive=True)
    assert not content.match(CallView({"text": "x"}, [str(work)]), restrictive=False)


@pytest.mark.parametrize("bare", ["/home/alice/**", "./src/*.py", "**/*.md", "src/*.py"])
def test_bare_content_that_looks_like_a_path(bare: str) -> None:
    assert isinstance(parse(bare), PathContent)


@pytest.mark.parametrize(
    "bad", ["path:../x", "path:src/../../x", "../x", "path:~/x", "path:", "path:a\x00b"]
)
def test_bad_globs_are_typed_errors(bad: str) -> None:
    with pytest.raises(InvalidPermissionRule):
        parse(bad)


def test_glob_character_classes_never_cross_a_slash() -> None:
    glob = PathGlob.compile("a[+-0]b")  # the range holds '/'
    assert glob.matches("a-b")
    assert not glob.matches("a/b")
    assert PathGlob.compile("a[]]b").matches("a]b")
    assert PathGlob.compile(r"a\*b").matches("a*b")
    assert not PathGlob.compile(r"a\*b").matches("axb")


def test_realpath_agrees_with_the_os(work: Path) -> None:
    import os

    for rel in ["src/a.py", "link_in/a.py", "link_out/secret", "up/outside", "abs_out", "new/x"]:
        assert realpath(str(work / rel)) == os.path.realpath(work / rel)
    assert realpath(str(work / "loop" / "x")) is None


def test_readings_hold_both_interpretations(work: Path) -> None:
    # the OS walks link_out then '..' (the real parent: root); normpath drops both
    r = readings("link_out/../notes.md", str(work))
    assert r is not None
    assert set(r.real) == {str(work.parent / "notes.md"), str(work / "notes.md")}
