"""What a filesystem backend gives the workspace: a handful of synchronous operations on
checked names, and the low-level signals the workspace turns into typed errors.

A backend never sees a raw path: only the tuple of names ``paths.split_path`` accepted,
prefixed with the scope's names. It raises ``OSError`` (``FileNotFoundError``,
``NotADirectoryError``, ...) or one of the signals below, and the workspace maps them to the
kernel's workspace errors with the path the caller gave.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Literal, Protocol

import attrs

Kind = Literal["file", "dir", "link", "other"]
Names = tuple[str, ...]


@attrs.frozen
class Stat:
    """What one lookup says about a path."""

    kind: Kind
    size: int
    mtime: float | None = None
    """Seconds since the epoch of the last change, when the filesystem says."""
    token: Hashable | None = None
    """Changes whenever the content does (inode + size + times, an ETag...); None: unknown."""


@attrs.frozen
class Entry:
    """One entry of a directory listing."""

    name: str
    kind: Kind
    size: int


class TooLarge(Exception):
    """A file over the size limit of the read or append that met it."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(size, limit)
        self.size, self.limit = size, limit


class NotRegular(Exception):
    """A path whose object is not a regular file (a directory, FIFO, socket, device)."""

    def __init__(self, kind: Kind) -> None:
        super().__init__(kind)
        self.kind = kind


class LinkRefused(Exception):
    """A symbolic link on the way (or at the end): never followed."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class ParentNotDir(Exception):
    """A parent of the path is a file (or other non-directory)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class Backend(Protocol):
    """A filesystem rooted at the workspace's base directory."""

    url: str
    """The base directory as a URL (``file:///...``, ``memory://...``, ``s3://...``)."""
    shared: bool
    """Other hosts see this filesystem (remote object stores, network filesystems)."""
    blocking: bool
    """Operations may block: the workspace runs them in a worker thread."""
    stat_blocking: bool
    """Metadata lookups may block (a remote round trip); False where a lookup is a local
    system call, which the workspace then makes on the loop (cheaper than a thread hop)."""

    def read(self, names: Names, limit: int) -> bytes: ...
    def write(self, names: Names, data: bytes) -> None: ...
    def append(self, names: Names, data: bytes, limit: int) -> int: ...
    def stat(self, names: Names) -> Stat | None: ...
    def stat_many(self, paths: list[Names]) -> list[Stat | None]: ...
    def listdir(self, names: Names) -> list[Entry]: ...
    def remove(self, names: Names) -> None: ...
    def walk(self, names: Names, max_files: int) -> tuple[list[tuple[str, int]], bool]:
        """Regular files below ``names`` as (relative path, size), sorted; at most
        ``max_files`` (the bool says the walk stopped there). Links are never followed."""
        ...


def url_join(url: str, names: Names) -> str:
    """A URL for messages: the base URL and the names."""
    return url.rstrip("/") + ("/" + "/".join(names) if names else "")
