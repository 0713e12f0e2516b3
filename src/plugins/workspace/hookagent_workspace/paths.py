"""Path bounds: a path from the model or the application becomes a tuple of safe names, or a
``WorkspacePathError`` saying why not.

Every workspace operation goes through ``split_path`` before any filesystem call, so a name
that could climb out (``..``), jump elsewhere (an absolute path, an fsspec URL or chain) or
confuse a backend (NUL and other control characters, a backslash, an over-long name) never
reaches one. Symlinks are the backends' business (the local one refuses to follow any).
"""

from __future__ import annotations

import functools
import re

from .errors import WorkspacePathError

MAX_PATH_CHARS = 1024
"""Longest accepted path, in characters."""
MAX_NAME_BYTES = 255
"""Longest accepted name (one component), in UTF-8 bytes: the usual filesystem limit."""
MAX_DEPTH = 32
"""Most components a path may have."""

_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
_URLISH = ("://", "::")


def _describe(ch: str) -> str:
    if ch == "\\":
        return "a backslash (use / to separate names)"
    if ch == "\x00":
        return "a NUL character"
    return f"the control character U+{ord(ch):04X}"


def split_path(path: object, *, allow_root: bool = False, what: str = "path") -> tuple[str, ...]:
    """The names of a relative POSIX path inside the workspace (see ``_split``)."""
    if not isinstance(path, str):
        raise WorkspacePathError(f"{what} must be a str, got {type(path).__name__}")
    if type(path) is not str:
        path = str.__str__(path)  # a plain copy of a str subclass: the cache keys exact strs
    return _split(path, allow_root, what)


@functools.lru_cache(maxsize=4096)
def _split(path: str, allow_root: bool, what: str) -> tuple[str, ...]:
    """The names of a relative POSIX path inside the workspace (cached: the same few paths
    come back on every request; a refusal raises, and exceptions are never cached).

    ``"."`` and empty components are dropped (``./a//b`` is ``a/b``); ``""`` (or ``"."``) is
    the workspace root, accepted only with ``allow_root`` (listing and searching). Refused:
    a non-str, an absolute path, ``..``, control characters, backslashes, lone surrogates,
    ``://`` and ``::`` (fsspec URL syntax), over-long names and paths, too many components.
    """
    if len(path) > MAX_PATH_CHARS:
        raise WorkspacePathError(f"{what} is {len(path)} characters, over {MAX_PATH_CHARS}")
    bad = _BAD_CHARS.search(path)
    if bad is not None:
        raise WorkspacePathError(f"{what} {path!r} contains {_describe(bad.group())}")
    if path.startswith("/"):
        raise WorkspacePathError(
            f"{what} {path!r} is absolute; give a path relative to the workspace root"
        )
    for mark in _URLISH:
        if mark in path:
            raise WorkspacePathError(
                f"{what} {path!r} contains {mark!r}: URLs are not paths inside the workspace"
            )
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise WorkspacePathError(f"{what} {path!r} contains '..'; paths cannot leave the workspace")
    if len(parts) > MAX_DEPTH:
        raise WorkspacePathError(f"{what} {path!r} has {len(parts)} names, over {MAX_DEPTH}")
    for name in parts:
        try:
            size = len(name.encode("utf-8"))
        except UnicodeEncodeError:
            raise WorkspacePathError(f"{what} {path!r} is not valid Unicode") from None
        if size > MAX_NAME_BYTES:
            raise WorkspacePathError(
                f"{what} {path!r}: the name {name[:40]!r}... is {size} bytes, over {MAX_NAME_BYTES}"
            )
    if not parts and not allow_root:
        raise WorkspacePathError(f"{what} {path!r} names the workspace root, not a file")
    return parts


def join(parts: tuple[str, ...]) -> str:
    """The canonical relative form of split names (``""`` for the root)."""
    return "/".join(parts)
