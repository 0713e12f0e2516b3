"""``rule_content``: which calls of a tool a rule is about.

::

    rule_content := (null or empty)         every call of the tool
                  | "command:" PATTERN      the call's command (``commands``)
                  | "path:" GLOB            the call's path arguments (``paths``)
                  | "arg:" POINTER "=" JSON   the argument at POINTER equals the JSON value
                  | "arg:" POINTER "=~" GLOB  the string argument at POINTER matches GLOB
                  | BARE                    a GLOB when it starts with ``/``, ``./`` or ``**``,
                                            or holds a ``/`` and no space; else a PATTERN

Every matcher answers for one of two sides. For an **allow** rule it must be sure: an
argument that is missing, of the wrong type or unresolvable means "no match". For a **deny**
or **ask** rule the same doubt means "match" (fail closed). A stored rule whose content does
not parse is kept and reported: as a deny or ask rule it matches every call of its tool, as
an allow rule none.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, Protocol

import attrs
import orjson

from .commands import CommandPattern, CommandPatternError, command_of
from .errors import InvalidPermissionRule
from .paths import GlobError, PathGlob, Readings, container, fold, inside, readings, realpath

PATH_ARGUMENTS = (
    "path",
    "paths",
    "file",
    "files",
    "file_path",
    "filepath",
    "filename",
    "dir",
    "directory",
    "cwd",
    "dest",
    "destination",
)
"""Top-level argument names that hold a path (a string, or a list of strings)."""


@attrs.define
class CallView:
    """One call as the matchers see it: its arguments and the working directories."""

    args: Mapping[str, Any]
    directories: Sequence[str] = ()
    path_arguments: Sequence[str] = PATH_ARGUMENTS

    @cached_property
    def roots(self) -> tuple[str, ...]:
        """The working directories' real paths (resolved once per call; bad ones skipped)."""
        out = []
        for d in self.directories:
            if d.startswith("/") and "\x00" not in d:
                real = realpath(d)
                if real is not None and real not in out:
                    out.append(real)
        return tuple(out)

    @cached_property
    def base(self) -> str | None:
        """Where a relative path argument starts: the first usable working directory."""
        return self.roots[0] if self.roots else None

    @cached_property
    def paths(self) -> list[Readings | None] | None:
        """Every path argument's readings (None for one that cannot be resolved), or None
        when the call has no path argument at all."""
        values: list[object] = []
        found = False
        for name in self.path_arguments:
            if name in self.args:
                found = True
                value = self.args[name]
                values.extend(value if isinstance(value, list) else [value])
        if not found:
            return None
        return [readings(v, self.base) for v in values] if values else [None]

    def edits_inside(self) -> bool:
        """Every path argument (at least one) lies inside a working directory, as every
        reading resolves it: what ``accept_edits`` lets through."""
        found = self.paths
        if not found:
            return False
        return all(r is not None and all(container(p, self.roots) for p in r.real) for r in found)


class Content(Protocol):
    @property
    def text(self) -> str: ...

    def match(self, call: CallView, restrictive: bool) -> bool: ...


@attrs.frozen
class AnyCall:
    text: str = ""

    def match(self, call: CallView, restrictive: bool) -> bool:
        return True


@attrs.frozen
class Unusable:
    """A stored rule_content that does not parse: restrictive rules match, allow rules not."""

    text: str
    problem: str

    def match(self, call: CallView, restrictive: bool) -> bool:
        return restrictive


@attrs.frozen
class CommandContent:
    text: str
    pattern: CommandPattern

    def match(self, call: CallView, restrictive: bool) -> bool:
        command = command_of(call.args)
        if command is None:
            return restrictive
        return self.pattern.catches(command) if restrictive else self.pattern.allows(command)


@attrs.frozen
class PathContent:
    text: str
    glob: PathGlob

    def match(self, call: CallView, restrictive: bool) -> bool:
        found = call.paths
        if not found:
            return restrictive
        if restrictive:
            return any(r is None or self._catches(r, call.roots) for r in found)
        return all(r is not None and self._allows(r, call.roots) for r in found)

    def _allows(self, r: Readings, roots: Sequence[str]) -> bool:
        for path in r.real:
            held = container(path, roots)
            if held is None:
                return False
            if not self.glob.matches(path if self.glob.absolute else held[1]):
                return False
        return True

    def _catches(self, r: Readings, roots: Sequence[str]) -> bool:
        for form in (*r.real, r.lexical):
            for folded in (False, True):
                subject = fold(form) if folded else form
                if self.glob.absolute:
                    if self.glob.matches(subject, folded):
                        return True
                    continue
                bases = [fold(root) if folded else root for root in roots]
                rels = [inside(subject, b) for b in bases] + [subject[1:]]
                if any(rel is not None and self.glob.matches(rel, folded) for rel in rels):
                    return True
        return False


_MISSING = object()


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


@attrs.frozen
class ArgContent:
    text: str
    pointer: tuple[str, ...]
    equals: Any = None
    glob: re.Pattern[str] | None = None
    folded: re.Pattern[str] | None = None

    def _lookup(self, args: Any) -> Any:
        cur = args
        for token in self.pointer:
            if isinstance(cur, Mapping):
                cur = cur.get(token, _MISSING)
            elif isinstance(cur, list) and re.fullmatch(r"0|[1-9][0-9]*", token):
                cur = cur[int(token)] if int(token) < len(cur) else _MISSING
            else:
                return _MISSING
            if cur is _MISSING:
                return _MISSING
        return cur

    def match(self, call: CallView, restrictive: bool) -> bool:
        value = self._lookup(call.args)
        if value is _MISSING:
            return restrictive
        if self.glob is None:
            if _json_equal(value, self.equals):
                return True
            both = isinstance(value, str) and isinstance(self.equals, str)
            return restrictive and both and fold(value) == fold(self.equals)
        if not isinstance(value, str):
            return restrictive
        if self.glob.fullmatch(value):
            return True
        return restrictive and self.folded is not None and bool(self.folded.fullmatch(fold(value)))


def _pointer(text: str) -> tuple[str, ...]:
    """An RFC 6901 JSON pointer (``/a/0/b~1c``) as its reference tokens."""
    if not text.startswith("/"):
        raise InvalidPermissionRule(f"a JSON pointer starts with '/', got {text!r}")
    tokens = text[1:].split("/")
    for token in tokens:
        if re.search(r"~(?![01])", token):
            raise InvalidPermissionRule(f"JSON pointer {text!r}: '~' must be '~0' or '~1'")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in tokens)


def _arg(text: str, body: str) -> ArgContent:
    pointer, sep, value = body.partition("=")
    if not sep:
        raise InvalidPermissionRule(f"{text!r}: write arg:POINTER=JSON or arg:POINTER=~GLOB")
    tokens = _pointer(pointer.strip())
    if value.startswith("~"):
        glob = value[1:]
        if not glob:
            raise InvalidPermissionRule(f"{text!r}: an empty glob after '=~'")
        return ArgContent(
            text,
            tokens,
            glob=re.compile(fnmatch.translate(glob), re.DOTALL),
            folded=re.compile(fnmatch.translate(fold(glob)), re.DOTALL),
        )
    try:
        expected: Any = orjson.loads(value)
    except orjson.JSONDecodeError:
        expected = value  # a bare word is a string: arg:/env=prod
    return ArgContent(text, tokens, equals=expected)


def looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "**")) or (
        "/" in text and not any(c.isspace() for c in text)
    )


def parse(content: str | None) -> Content:
    """The matcher for ``content``; a typed ``InvalidPermissionRule`` when it cannot be used."""
    if content is None or not content.strip():
        return AnyCall()
    text = content.strip()
    kind, sep, body = text.partition(":")
    try:
        if sep and kind == "command":
            return CommandContent(text, CommandPattern.compile(body))
        if sep and kind == "path":
            return PathContent(text, PathGlob.compile(body.strip()))
        if sep and kind == "arg":
            return _arg(text, body)
        if looks_like_path(text):
            return PathContent(text, PathGlob.compile(text))
        return CommandContent(text, CommandPattern.compile(text))
    except (GlobError, CommandPatternError, re.error) as exc:
        raise InvalidPermissionRule(f"rule_content {content!r}: {exc}") from None


def parse_stored(content: str | None) -> Content:
    """``parse`` for a rule read from a slot: never raises (an unusable rule fails closed)."""
    try:
        return parse(content)
    except InvalidPermissionRule as exc:
        return Unusable(content or "", str(exc))
