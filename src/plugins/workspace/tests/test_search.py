"""glob patterns (matched without regexes) and grep's guarded regular expressions."""

from __future__ import annotations

import re
import time

import pytest
from hookagent_workspace import PatternError
from hookagent_workspace.globs import Glob
from hookagent_workspace.grep import compile_pattern, search_lines


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/a/b.txt", True),
        ("src/**/test_*.py", "src/test_x.py", True),
        ("src/**/test_*.py", "src/a/b/test_x.py", True),
        ("src/**/test_*.py", "lib/test_x.py", False),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("[a-c]x", "cx", True),
        ("*.{py,md}", "r.md", True),
        ("*.{py,md}", "r.txt", False),
        ("a*b*c", "aXXbYYc", True),
        ("a*b*c", "aXXbYY", False),
        ("[[]x]", "[x]", True),
        ("./*.py", "a.py", True),
    ],
)
def test_glob_matches(pattern: str, path: str, hit: bool) -> None:
    assert Glob(pattern).match(path) is hit


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("", "non-empty"),
        ("/etc/*", "relative"),
        ("../*", "'..'"),
        ("[abc", "not closed"),
        ("{a,b", "not closed"),
        ("a}", "without its"),
        ("{a,{b,c}}", "nested"),
        ("[z-a]", "bad range"),
        ("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}", "expand to over"),
        ("a\x00b", "control"),
    ],
)
def test_bad_globs_say_why(pattern: str, why: str) -> None:
    with pytest.raises(PatternError, match=re.escape(why)):
        Glob(pattern)


def test_a_star_heavy_glob_stays_fast() -> None:
    glob = Glob("*a*a*a*a*a*a*a*a*a*a*b")
    started = time.perf_counter()
    assert not glob.match("a" * 250)
    assert not Glob("**/**/**/**/**/x").match("/".join(["d"] * 32))
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a+)+$", "repetition inside a repetition"),
        ("(a*)*", "repetition inside a repetition"),
        ("(?:x+y)*z", "repetition inside a repetition"),
        ("(ab|a)*c", "repetition of alternatives"),
        (r"(a)\1", "backreferences"),
        ("(", "bad regular expression"),
        ("", "non-empty"),
    ],
)
def test_costly_or_bad_regexes_are_refused(pattern: str, why: str) -> None:
    with pytest.raises(PatternError, match=why):
        compile_pattern(pattern)


@pytest.mark.parametrize(
    "pattern", [r"def \w+\(", r"(foo|bar)baz", "[ab]*c", r"x{2,5}", r"(?i)todo", "(a|b)*"]
)
def test_ordinary_regexes_are_accepted(pattern: str) -> None:
    compile_pattern(pattern)


def test_fixed_strings_escape_the_pattern() -> None:
    assert compile_pattern("a.(b)", fixed_strings=True).search("xa.(b)y")
    assert not compile_pattern("a.(b)", fixed_strings=True).search("axb")


def test_search_lines_bounds_and_skips() -> None:
    files = [("a.txt", 12), ("bin", 4), ("gone", 3), ("b.txt", 8)]
    data = {"a.txt": b"hit\nmiss\nhit\n", "bin": b"\x00hit", "b.txt": b"hit\nhit\n"}
    found = search_lines(
        compile_pattern("hit"), files, data.get, max_matches=3, max_bytes=100, max_seconds=5
    )
    assert found.matches == [("a.txt", 1, "hit"), ("a.txt", 3, "hit"), ("b.txt", 1, "hit")]
    assert found.cut == ["3 matches"]
    assert found.skipped == ["1 binary", "1 unreadable or over the size limit"]
    budget = search_lines(
        compile_pattern("hit"), files, data.get, max_matches=10, max_bytes=10, max_seconds=5
    )
    assert budget.cut == ["the 10-byte read budget"] and budget.files_scanned == 0
