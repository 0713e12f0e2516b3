"""Listing on fsspec filesystems: the session directories of a user, sorted, one page.

Object stores keep no directory signature to validate an index against, so each page lists
the user's prefix again (``ls``) and sorts it: O(sessions) per page here, unlike local disk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookagent.store.base import SessionPage

from .layout import MORE, is_private, parts_to_id


def leaves(fs: Any, path: str, prefix: list[str]) -> list[list[str]]:
    """Every id below ``path`` as path parts (long ids span ``+`` directories)."""
    out: list[list[str]] = []
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError:
        return out
    for entry in entries:
        name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
        if is_private(name) or entry.get("type") != "directory":
            continue
        parts = [*prefix, name]
        if name.endswith(MORE):
            out += leaves(fs, f"{path}/{name}", parts)
        elif parts_to_id(parts) is not None:
            out.append(parts)
    return out


def list_page(
    fs: Any, upath: str, limit: int, cursor: str | None, key_live: Callable[[str], bool]
) -> SessionPage:
    """Up to ``limit`` session ids after ``cursor`` ("" or None: the first page) whose
    directory holds a live key."""
    found = sorted((parts_to_id(p), p) for p in leaves(fs, upath, []))
    ids: list[str] = []
    for sid, parts in found:
        if sid is None or (cursor and sid <= cursor):
            continue
        spath = "/".join([upath, *parts])
        if not any(key_live("/".join([spath, *k])) for k in leaves(fs, spath, [])):
            continue
        if len(ids) == limit:
            return SessionPage(tuple(ids), ids[-1])
        ids.append(sid)
    return SessionPage(tuple(ids), None)
