"""Glob patterns, matched without regular expressions so that no pattern can be slow.

``*`` matches any run of characters inside one name, ``?`` one character, ``[abc]``,
``[a-z]`` and ``[!x]`` one character of a class, ``**`` (a whole name) any number of names,
and ``{a,b}`` either alternative (not nested; at most ``MAX_EXPANSIONS`` patterns in all).
One name is matched with the classic single-backtrack wildcard walk (linear in the name for
each star) and names with a memoised walk over (pattern name, path name) pairs, so a match
costs at most (pattern length x path length) steps, whatever the pattern.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import cast

from .errors import PatternError

MAX_PATTERN_CHARS = 1000
MAX_EXPANSIONS = 64

Token = tuple[str, object]  # ("lit", ch) | ("any", None) | ("star", None) | ("class", spec)
ClassSpec = tuple[bool, tuple[tuple[str, str], ...]]


def _parse_class(text: str, i: int) -> tuple[ClassSpec, int]:
    """A ``[...]`` class starting after ``[`` at ``i``; returns (spec, index after ``]``)."""
    negate = i < len(text) and text[i] in "!^"
    if negate:
        i += 1
    ranges: list[tuple[str, str]] = []
    first = True
    while i < len(text):
        ch = text[i]
        if ch == "]" and not first:
            return (negate, tuple(ranges)), i + 1
        first = False
        if i + 2 < len(text) and text[i + 1] == "-" and text[i + 2] != "]":
            lo, hi = ch, text[i + 2]
            if lo > hi:
                raise PatternError(f"bad range {lo}-{hi} in a [...] class")
            ranges.append((lo, hi))
            i += 3
        else:
            ranges.append((ch, ch))
            i += 1
    raise PatternError("a [ class is not closed with ]")


def _tokens(name: str) -> tuple[Token, ...]:
    out: list[Token] = []
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == "*":
            if not out or out[-1][0] != "star":
                out.append(("star", None))
            i += 1
        elif ch == "?":
            out.append(("any", None))
            i += 1
        elif ch == "[":
            spec, i = _parse_class(name, i + 1)
            out.append(("class", spec))
        else:
            out.append(("lit", ch))
            i += 1
    return tuple(out)


def _one(token: Token, ch: str) -> bool:
    kind, arg = token
    if kind == "any":
        return True
    if kind == "lit":
        return arg == ch
    negate, ranges = cast(ClassSpec, arg)
    inside = any(lo <= ch <= hi for lo, hi in ranges)
    return inside != negate


def match_name(tokens: Sequence[Token], name: str) -> bool:
    """Does one name match one name-pattern (no ``/`` on either side)?"""
    t = n = 0
    star_t = star_n = -1
    while n < len(name):
        if t < len(tokens) and tokens[t][0] == "star":
            star_t, star_n = t, n
            t += 1
        elif t < len(tokens) and _one(tokens[t], name[n]):
            t += 1
            n += 1
        elif star_t >= 0:
            star_n += 1
            t, n = star_t + 1, star_n
        else:
            return False
    while t < len(tokens) and tokens[t][0] == "star":
        t += 1
    return t == len(tokens)


def _expand(pattern: str) -> list[str]:
    start = pattern.find("{")
    if start < 0:
        if "}" in pattern:
            raise PatternError("a } without its {")
        return [pattern]
    end = pattern.find("}", start)
    if end < 0:
        raise PatternError("a { is not closed with }")
    inner = pattern[start + 1 : end]
    if "{" in inner:
        raise PatternError("nested {...} alternatives are not supported")
    out: list[str] = []
    for alt in inner.split(","):
        for rest in _expand(pattern[end + 1 :]):
            out.append(pattern[:start] + alt + rest)
            if len(out) > MAX_EXPANSIONS:
                raise PatternError(f"the {{...}} alternatives expand to over {MAX_EXPANSIONS}")
    return out


class Glob:
    """A compiled glob pattern, matched against ``/``-separated relative paths."""

    def __init__(self, pattern: object) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise PatternError("a glob pattern must be a non-empty str")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise PatternError(f"the glob pattern is over {MAX_PATTERN_CHARS} characters")
        if any(ord(c) < 32 or c == "\x7f" for c in pattern):
            raise PatternError("the glob pattern contains a control character")
        if pattern.startswith("/"):
            raise PatternError("glob patterns are relative to the directory searched")
        self.pattern = pattern
        self._alternatives = [self._compile(p) for p in _expand(pattern)]

    @staticmethod
    def _compile(pattern: str) -> tuple[tuple[Token, ...] | None, ...]:
        names = [n for n in pattern.split("/") if n not in ("", ".")]
        if ".." in names:
            raise PatternError("'..' cannot appear in a glob pattern")
        return tuple(None if n == "**" else _tokens(n) for n in names)

    def match(self, path: str) -> bool:
        names = tuple(path.split("/"))
        return any(_match_path(alt, names) for alt in self._alternatives)


def _match_path(pattern: tuple[tuple[Token, ...] | None, ...], names: tuple[str, ...]) -> bool:
    @functools.cache
    def walk(p: int, n: int) -> bool:
        if p == len(pattern):
            return n == len(names)
        tokens = pattern[p]
        if tokens is None:  # "**": zero names, or one more name and stay on "**"
            return walk(p + 1, n) or (n < len(names) and walk(p, n + 1))
        return n < len(names) and match_name(tokens, names[n]) and walk(p + 1, n + 1)

    return walk(0, 0)
