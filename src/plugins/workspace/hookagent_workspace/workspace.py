"""``FsWorkspace``: the kernel's ``Workspace`` contract on a backend, for one scope directory.

Each method checks the path (``paths.split_path``), prefixes the scope's names, runs the
backend operation (in a worker thread when the backend may block) and turns what went wrong
into a typed error naming the path as the caller gave it: never the host's absolute path, so
a message the model reads reveals nothing outside its workspace.
"""

from __future__ import annotations

import builtins
import errno
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import anyio.to_thread
import attrs
from hookagent.errors import AgentError

from .backend import (
    Backend,
    Entry,
    LinkRefused,
    Names,
    NotRegular,
    ParentNotDir,
    Stat,
    TooLarge,
    url_join,
)
from .errors import (
    NotADirectory,
    NotAFile,
    NotText,
    WorkspaceFileNotFound,
    WorkspaceLimitExceeded,
    WorkspacePathError,
    WorkspaceUnavailable,
)
from .paths import join, split_path

T = TypeVar("T")

RACY_SECONDS = 2.0
"""A file changed this recently gets a fresh version on every look: timestamps are coarse
(milliseconds on ext4, seconds on object stores), so two edits inside one tick with the same
size would otherwise look alike (git's "racily clean" rule)."""


def _positive(_: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, got {value!r}")


def _seconds(_: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if type(value) not in (int, float) or not 0 < value <= 3600:
        raise ValueError(
            f"{attribute.name} must be a number of seconds in (0, 3600], got {value!r}"
        )


@attrs.frozen
class Limits:
    """The bounds of one workspace (every one is checked before anything is written)."""

    max_file_bytes: int = attrs.field(default=1_048_576, validator=_positive)
    """Largest file read, written or appended to (bytes)."""
    max_results: int = attrs.field(default=500, validator=_positive)
    """Most entries ``list_files``, ``glob`` and ``grep`` return."""
    max_scan_files: int = attrs.field(default=5_000, validator=_positive)
    """Most files ``glob`` and ``grep`` look at."""
    max_scan_bytes: int = attrs.field(default=32 * 1_048_576, validator=_positive)
    """Most bytes one ``grep`` reads."""
    max_output_chars: int = attrs.field(default=40_000, validator=_positive)
    """Longest text a file tool returns to the model."""
    max_search_seconds: float = attrs.field(default=10.0, validator=_seconds)
    """Longest time one ``grep`` searches (checked between lines)."""


def _kind_word(kind: str) -> str:
    return {"dir": "a directory", "link": "a symbolic link"}.get(kind, "not a regular file")


def map_error(exc: BaseException, shown: str, op: str) -> BaseException:
    """The typed error for what a backend raised (unknown ``BaseException``s pass through)."""
    where = repr(shown) if shown else "the workspace root"
    if isinstance(exc, AgentError):
        return exc
    if isinstance(exc, TooLarge):
        return WorkspaceLimitExceeded(
            f"{op} {where}: {exc.size} bytes is over the workspace's limit of "
            f"{exc.limit} bytes per file"
        )
    if isinstance(exc, NotRegular):
        return NotAFile(f"{op} {where}: it is {_kind_word(exc.kind)}, not a file")
    if isinstance(exc, LinkRefused):
        return WorkspacePathError(
            f"{op} {where}: {exc.name!r} is a symbolic link; the workspace never follows links"
        )
    if isinstance(exc, (ParentNotDir, NotADirectoryError)):
        return NotADirectory(f"{op} {where}: a name on the way is a file, not a directory")
    if isinstance(exc, FileNotFoundError):
        return WorkspaceFileNotFound(f"{op} {where}: no such file or directory in the workspace")
    if isinstance(exc, IsADirectoryError):
        return NotAFile(f"{op} {where}: it is a directory, not a file")
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return WorkspacePathError(f"{op} {where}: the name is too long for this filesystem")
    if isinstance(exc, OSError):
        return WorkspaceUnavailable(f"{op} {where} failed: {exc.strerror or exc}")
    if isinstance(exc, Exception):
        return WorkspaceUnavailable(f"{op} {where} failed: {type(exc).__name__}: {exc}")
    return exc


def _version(info: Stat | None, now: float) -> Hashable | None:
    if info is None or info.kind != "file":
        return None
    if info.token is None or info.mtime is None or now - info.mtime < RACY_SECONDS:
        return object()
    return info.token


class FsWorkspace:
    """One scope directory of a workspace: ``hookagent.Workspace`` and a little more
    (bytes, versions, entries, walks) for the file tools and for cheap change checks."""

    def __init__(self, backend: Backend, names: Names = (), limits: Limits | None = None) -> None:
        self.backend = backend
        self.names = names
        self.limits = limits or Limits()
        self.url = url_join(backend.url, names)
        self.shared = backend.shared

    def __repr__(self) -> str:
        return f"FsWorkspace({self.url!r})"

    async def run(self, op: str, shown: str, fn: Callable[..., T], *args: Any) -> T:
        """Run a backend function as every operation does: in a worker thread when the
        backend may block, with its errors mapped (``op`` and ``shown`` word the message)."""
        return await self._call(self.backend.blocking, op, shown, fn, *args)

    async def _lookup(self, shown: str, names: Names) -> Stat | None:
        """A metadata lookup: on the loop where the backend says they never wait."""
        return await self._call(
            self.backend.stat_blocking, "look up", shown, self.backend.stat, names
        )

    async def _call(
        self, blocking: bool, op: str, shown: str, fn: Callable[..., T], *args: Any
    ) -> T:
        try:
            if blocking:
                return await anyio.to_thread.run_sync(fn, *args)
            return fn(*args)
        except Exception as exc:
            raise map_error(exc, shown, op) from exc

    def _file(self, path: str) -> tuple[Names, str]:
        parts = split_path(path)
        return self.names + parts, join(parts)

    def _dir(self, path: str) -> tuple[Names, str]:
        parts = split_path(path, allow_root=True)
        return self.names + parts, join(parts)

    # ---- reading
    async def read_bytes(self, path: str) -> bytes:
        names, shown = self._file(path)
        return await self.run("read", shown, self.backend.read, names, self.limits.max_file_bytes)

    async def read_text(self, path: str) -> str:
        data = await self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotText(
                f"read {join(split_path(path))!r}: not UTF-8 text (bad byte at offset {exc.start})"
            ) from None

    async def exists(self, path: str) -> bool:
        names, shown = self._dir(path)
        if not names:
            return True
        return await self._lookup(shown, names) is not None

    async def is_dir(self, path: str) -> bool:
        names, shown = self._dir(path)
        if not names:
            return True
        info = await self._lookup(shown, names)
        return info is not None and info.kind == "dir"

    async def size(self, path: str) -> int:
        names, shown = self._file(path)
        info = await self._lookup(shown, names)
        if info is None:
            raise WorkspaceFileNotFound(f"size {shown!r}: no such file in the workspace")
        if info.kind != "file":
            raise NotAFile(f"size {shown!r}: it is {_kind_word(info.kind)}, not a file")
        return info.size

    async def version(self, path: str) -> Hashable | None:
        """A value that changes whenever the file does (None: no such file). A file changed
        in the last ``RACY_SECONDS``, or one whose filesystem gives no change marker, gets a
        new value on every call, so comparing versions never misses an edit."""
        return (await self.versions([path]))[0]

    async def versions(self, paths: Sequence[str]) -> builtins.list[Hashable | None]:
        """``version`` of several files in one lookup (each directory opened once)."""
        checked = [self._file(p) for p in paths]
        shown = ", ".join(s for _, s in checked)
        found = await self._call(
            self.backend.stat_blocking,
            "look up",
            shown,
            self.backend.stat_many,
            [names for names, _ in checked],
        )
        now = time.time()
        return [_version(info, now) for info in found]

    async def entries(self, path: str = "") -> builtins.list[Entry]:
        """The directory's entries (name, kind, size), sorted by name."""
        names, shown = self._dir(path)
        try:
            return await self.run("list", shown, self.backend.listdir, names)
        except WorkspaceFileNotFound:
            if names == self.names:
                return []  # a workspace nobody wrote to yet
            raise

    async def list(self, path: str = "") -> list[str]:
        """Paths (relative to the workspace root) of the directory's entries, sorted;
        directories end with ``/``."""
        parts = split_path(path, allow_root=True)
        prefix = join(parts) + "/" if parts else ""
        return [
            prefix + e.name + ("/" if e.kind == "dir" else "") for e in await self.entries(path)
        ]

    async def walk(self, path: str = "") -> tuple[builtins.list[tuple[str, int]], bool]:
        """Regular files below ``path`` as (path relative to the root, size), sorted, at most
        ``limits.max_scan_files`` (the bool says there were more)."""
        names, shown = self._dir(path)
        try:
            files, more = await self.run(
                "walk", shown, self.backend.walk, names, self.limits.max_scan_files
            )
        except WorkspaceFileNotFound:
            if names == self.names:
                return [], False
            raise
        prefix = shown + "/" if shown else ""
        return [(prefix + rel, size) for rel, size in files], more

    # ---- writing
    def _encode(self, text: object, shown: str, op: str) -> bytes:
        if not isinstance(text, str):
            raise NotText(f"{op} {shown!r}: text must be a str, got {type(text).__name__}")
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise NotText(f"{op} {shown!r}: the text is not valid Unicode") from None

    async def write_bytes(self, path: str, data: bytes) -> None:
        names, shown = self._file(path)
        if len(data) > self.limits.max_file_bytes:
            raise map_error(TooLarge(len(data), self.limits.max_file_bytes), shown, "write")
        await self.run("write", shown, self.backend.write, names, bytes(data))

    async def write_text(self, path: str, text: str) -> None:
        _, shown = self._file(path)
        await self.write_bytes(path, self._encode(text, shown, "write"))

    async def append_text(self, path: str, text: str) -> None:
        names, shown = self._file(path)
        data = self._encode(text, shown, "append to")
        limit = self.limits.max_file_bytes
        if len(data) > limit:
            raise map_error(TooLarge(len(data), limit), shown, "append to")
        await self.run("append to", shown, self.backend.append, names, data, limit)

    async def remove(self, path: str) -> None:
        names, shown = self._file(path)
        await self.run("remove", shown, self.backend.remove, names)
