"""``grep``'s search: a guarded regular expression run over the workspace's text files.

Python's ``re`` backtracks and cannot be interrupted, so a pattern is refused before it runs
when it has the shapes that make backtracking explode: a repetition inside a repetition
(``(a+)+``), a repetition of a multi-character alternation (``(ab|a)*``), and backreferences.
Lines are matched on their first ``MAX_LINE_CHARS`` characters, files, bytes, matches and
wall time are bounded, and each bound that cut the search is reported.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable
from typing import Any

import attrs

from .errors import PatternError

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

MAX_PATTERN_CHARS = 1000
MAX_LINE_CHARS = 2000
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT}
_REFS = {_c.GROUPREF, _c.GROUPREF_EXISTS}
_UNBOUNDED_ABOVE = 64
"""A repetition whose maximum is over this counts as unbounded."""


def _walk(items: Any, inside_repeat: bool) -> None:
    for op, arg in items:
        if op in _REFS:
            raise PatternError("backreferences are not supported in grep patterns")
        if op in _REPEATS:
            _low, high, body = arg
            wide = high > 1
            if inside_repeat and wide:
                raise PatternError(
                    "a repetition inside a repetition (like (a+)+) can take forever; "
                    "rewrite it without nesting"
                )
            _walk(body, inside_repeat or high > _UNBOUNDED_ABOVE or high == _c.MAXREPEAT)
        elif op == _c.BRANCH:
            if inside_repeat:
                raise PatternError(
                    "a repetition of alternatives (like (ab|a)*) can take forever; "
                    "use a character class or separate searches"
                )
            for branch in arg[1]:
                _walk(branch, inside_repeat)
        elif op == _c.SUBPATTERN:
            _walk(arg[3], inside_repeat)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            _walk(arg[1], inside_repeat)
        elif op == _c.ATOMIC_GROUP:
            _walk(arg, inside_repeat)


def compile_pattern(
    pattern: object, *, ignore_case: bool = False, fixed_strings: bool = False
) -> re.Pattern[str]:
    """The compiled pattern, or ``PatternError`` saying what to change."""
    if not isinstance(pattern, str) or not pattern:
        raise PatternError("a grep pattern must be a non-empty str")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the grep pattern is over {MAX_PATTERN_CHARS} characters")
    if fixed_strings:
        pattern = re.escape(pattern)
    flags = re.IGNORECASE if ignore_case else 0
    try:
        parsed = _parser.parse(pattern, flags)
    except re.error as exc:
        raise PatternError(f"bad regular expression: {exc}") from None
    _walk(parsed, False)
    return re.compile(pattern, flags)


@attrs.define
class GrepResult:
    """What one search found, and which bounds cut it."""

    matches: list[tuple[str, int, str]] = attrs.Factory(list)
    """(path, line number, line) in path order."""
    files_scanned: int = 0
    files_matched: int = 0
    skipped: list[str] = attrs.Factory(list)
    """Why files were passed over ("3 binary", "1 over the size limit")."""
    cut: list[str] = attrs.Factory(list)
    """Bounds that stopped the search early."""


def search_lines(
    regex: re.Pattern[str],
    files: list[tuple[str, int]],
    read: Callable[[str], bytes | None],
    *,
    max_matches: int,
    max_bytes: int,
    max_seconds: float,
) -> GrepResult:
    """Search the files (path, size) in order; ``read(path)`` gives the bytes or None when
    the file cannot be read as text (too large, vanished). Runs synchronously."""
    out = GrepResult()
    deadline = time.monotonic() + max_seconds
    budget = max_bytes
    binary = unreadable = 0
    for path, size in files:
        if size > budget:
            out.cut.append(f"the {max_bytes}-byte read budget")
            break
        if time.monotonic() > deadline:
            out.cut.append(f"the {max_seconds:g}-second time budget")
            break
        data = read(path)
        out.files_scanned += 1
        if data is None:
            unreadable += 1
            continue
        budget -= len(data)
        if b"\x00" in data[:8192]:
            binary += 1
            continue
        text = data.decode("utf-8", errors="replace")
        hit = False
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line[:MAX_LINE_CHARS]) is None:
                continue
            hit = True
            out.matches.append((path, number, line))
            if len(out.matches) >= max_matches:
                out.files_matched += 1
                out.cut.append(f"{max_matches} matches")
                return _skips(out, binary, unreadable)
        out.files_matched += hit
        if time.monotonic() > deadline:
            out.cut.append(f"the {max_seconds:g}-second time budget")
            break
    return _skips(out, binary, unreadable)


def _skips(out: GrepResult, binary: int, unreadable: int) -> GrepResult:
    if binary:
        out.skipped.append(f"{binary} binary")
    if unreadable:
        out.skipped.append(f"{unreadable} unreadable or over the size limit")
    return out
