"""Paths in tool arguments: resolved on the local filesystem, compared exactly, fail closed.

A path argument is read two ways, because tools do both: as the OS resolves it (each
component in order, symlinks followed, ``..`` applied to the real parent) and as a tool that
calls ``os.path.normpath`` first reads it (``..`` removed lexically, then symlinks followed).
An allow rule needs *every* reading inside a working directory and matching its glob; a deny
or ask rule needs *any* reading (or the raw lexical form, or its NFKC case-folded form) to
match. Nothing is normalised on the allow side beyond what the filesystem itself does, so a
look-alike name (a Cyrillic letter for a Latin one, a fullwidth letter, NFD for NFC) is simply another path.
A path that cannot be resolved safely (NUL or control characters, too long, a symlink loop,
an unreadable directory, a relative path with no working directory) is unresolvable: allow
rules never match it, deny and ask rules always do.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import unicodedata
from collections.abc import Sequence

import attrs

MAX_LINKS = 40
MAX_PATH = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def fold(text: str) -> str:
    """The look-alike-insensitive form deny and ask rules also try: NFKC, case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def realpath(path: str) -> str | None:
    """``path`` (absolute) with every existing symlink followed, as the OS walks it; None
    when it cannot be resolved safely. Missing components are kept lexically, but a ``..``
    after one goes back to checking the filesystem, so ``missing/../link`` still follows
    ``link``."""
    pending = list(reversed(path.split("/")))
    stack: list[str] = []
    links = 0
    missing = False
    while pending:
        comp = pending.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            if stack:
                stack.pop()
            missing = False
            continue
        if missing:
            stack.append(comp)
            continue
        candidate = "/" + "/".join([*stack, comp])
        try:
            st = os.lstat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            missing = True
            stack.append(comp)
            continue
        except (OSError, ValueError):  # EACCES, ENAMETOOLONG, an unencodable name
            return None
        if not stat.S_ISLNK(st.st_mode):
            stack.append(comp)
            continue
        links += 1
        if links > MAX_LINKS:
            return None  # a loop, or a chain no one needs
        try:
            target = os.readlink(candidate)
        except (OSError, ValueError):
            return None
        if target.startswith("/"):
            stack = []
        pending.extend(reversed(target.split("/")))
    return "/" + "/".join(stack)


@attrs.frozen
class Readings:
    """What one path argument may mean. ``real``: the resolved readings (the OS's and the
    normpath-first one); ``lexical``: the unresolved absolute form."""

    real: tuple[str, ...]
    lexical: str


def readings(value: object, base: str | None) -> Readings | None:
    """The readings of one argument value, or None when it is not a path we can resolve."""
    if not isinstance(value, str) or not value or len(value) > MAX_PATH:
        return None
    if _CONTROL.search(value):
        return None
    if not value.startswith("/"):
        if base is None:
            return None
        value = f"{base}/{value}"
    lexical = posixpath.normpath(value)
    if lexical.startswith("//"):
        lexical = "/" + lexical.lstrip("/")
    real = []
    for form in (value, lexical):
        resolved = realpath(form)
        if resolved is None:
            return None
        if resolved not in real:
            real.append(resolved)
    return Readings(tuple(real), lexical)


def inside(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` ('' for root itself), or None when it is not inside.
    A sibling with the same prefix (``/w/trips-evil`` for ``/w/trips``) is not inside."""
    if path == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def container(path: str, roots: Sequence[str]) -> tuple[str, str] | None:
    """(root, relative path) of the first working directory that holds ``path``."""
    for root in roots:
        rel = inside(path, root)
        if rel is not None:
            return root, rel
    return None


# --------------------------------------------------------------------------- globs


class GlobError(ValueError):
    """A path glob that cannot be used (``..``, ``~``, empty, a NUL)."""


def _component(glob: str) -> str:
    """One path component's glob as a regex that never crosses a ``/``."""
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        elif c == "[":
            start = i + 2 if glob[i + 1 : i + 2] in ("!", "^") else i + 1
            end = glob.find("]", start + 1 if glob[start : start + 1] == "]" else start)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("]", "\\]")
                out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@attrs.frozen
class PathGlob:
    """A compiled path glob: ``/`` separates components, ``*`` ``?`` ``[..]`` stay within one,
    ``**`` spans any number (zero included), a trailing ``/`` means the directory and all
    below. Absolute when it starts with ``/``; otherwise relative to a working directory."""

    text: str
    absolute: bool
    regex: re.Pattern[str]
    folded: re.Pattern[str]

    @classmethod
    def compile(cls, text: str) -> PathGlob:
        if not text or _CONTROL.search(text):
            raise GlobError("a path glob must be non-empty, without control characters")
        if text.startswith("~"):
            raise GlobError("'~' is not expanded: write the absolute path")
        absolute = text.startswith("/")
        body = text[2:] if text.startswith("./") else text
        if body.endswith("/"):
            body += "**"
        comps = [c for c in body.split("/") if c not in ("", ".")]
        if ".." in comps:
            raise GlobError("'..' is not allowed in a path glob")
        if not comps:
            comps = ["**"]
        return cls(text, absolute, _regex(comps), _regex([fold(c) for c in comps]))

    def matches(self, path: str, folded: bool = False) -> bool:
        """``path``: absolute for an absolute glob, else relative to the working directory."""
        subject = path if self.absolute else ("/" + path if path else "")
        return bool((self.folded if folded else self.regex).fullmatch(subject))


def _regex(comps: list[str]) -> re.Pattern[str]:
    out = []
    for i, comp in enumerate(comps):
        if comp == "**":
            out.append("(?:/.*)?" if i == len(comps) - 1 else "(?:/[^/]+)*")
        else:
            out.append("/" + _component(comp))
    return re.compile("".join(out), re.DOTALL)
