"""The fsspec backend: ``memory://`` and every remote filesystem (``s3://``, ``gs://``,
``az://``, ``sftp://``...), through fsspec's synchronous API.

These filesystems have no symbolic links to follow, so path bounds are the checked names
alone. Object stores have no append: ``append`` reads and rewrites the object (bounded by the
size limit; concurrent appends to one object from two hosts can lose one, as on any object
store without conditional writes). Errors other than the ``OSError`` family become
``WorkspaceUnavailable`` in the workspace layer.
"""

from __future__ import annotations

import datetime
from collections.abc import Hashable
from typing import Any

from fsspec import AbstractFileSystem  # type: ignore[import-untyped]

from .backend import Entry, Kind, Names, NotRegular, ParentNotDir, Stat, TooLarge

_TOKEN_KEYS = ("ETag", "etag", "generation", "md5Hash", "version_id", "VersionId")
_MTIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "modified", "modify")


def _seconds(value: object) -> float | None:
    """A modification time as epoch seconds: a datetime, a number, or FTP's ``YYYYMMDDHHMMSS``."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and len(value) >= 14 and value[:14].isdigit():
        stamp = datetime.datetime.strptime(value[:14], "%Y%m%d%H%M%S")
        return stamp.replace(tzinfo=datetime.UTC).timestamp()
    return None


def _kind(info: dict[str, Any]) -> Kind:
    kind = info.get("type")
    if kind == "file":
        return "file"
    if kind == "directory":
        return "dir"
    if kind == "link":
        return "link"
    return "other"


class FsspecBackend:
    """A directory on any fsspec filesystem other than local disk."""

    def __init__(self, fs: AbstractFileSystem, base: str, *, url: str, shared: bool) -> None:
        self.fs = fs
        self.base = str(fs._strip_protocol(base)).rstrip("/")
        self.url = url
        self.shared = shared
        self.blocking = "memory" not in protocols(fs)
        """A memory filesystem answers at once: calling it on the loop is cheaper than a
        thread hop; everything else may wait on the network."""
        self.stat_blocking = self.blocking

    def _path(self, names: Names) -> str:
        return "/".join((self.base, *names)) if names else self.base

    def _info(self, names: Names) -> dict[str, Any] | None:
        try:
            info: dict[str, Any] = self.fs.info(self._path(names))
        except FileNotFoundError:
            return None
        return info

    def _check_parents(self, names: Names) -> None:
        """Refuse to put a file below a file (object stores would let ``a`` and ``a/b``
        both exist, which no directory tree can show)."""
        for i in range(1, len(names)):
            info = self._info(names[:i])
            if info is None:
                return
            if _kind(info) != "dir":
                raise ParentNotDir(names[i - 1])

    def read(self, names: Names, limit: int) -> bytes:
        info = self._info(names)
        if info is None:
            self._check_parents(names)
            raise FileNotFoundError(self._path(names))
        if _kind(info) != "file":
            raise NotRegular(_kind(info))
        size = int(info.get("size") or 0)
        if size > limit:
            raise TooLarge(size, limit)
        with self.fs.open(self._path(names), "rb") as f:
            data: bytes = f.read(limit + 1)
        if len(data) > limit:
            raise TooLarge(len(data), limit)
        return data

    def write(self, names: Names, data: bytes) -> None:
        info = self._info(names)
        if info is not None and _kind(info) == "dir":
            raise NotRegular("dir")
        self._check_parents(names)
        if len(names) > 1:
            self.fs.makedirs(self._path(names[:-1]), exist_ok=True)
        self.fs.pipe_file(self._path(names), data)

    def append(self, names: Names, data: bytes, limit: int) -> int:
        info = self._info(names)
        old = b""
        if info is not None:
            if _kind(info) != "file":
                raise NotRegular(_kind(info))
            size = int(info.get("size") or 0)
            if size + len(data) > limit:
                raise TooLarge(size + len(data), limit)
            old = self.read(names, limit)
        if len(old) + len(data) > limit:
            raise TooLarge(len(old) + len(data), limit)
        self.write(names, old + data)
        return len(old) + len(data)

    def stat(self, names: Names) -> Stat | None:
        info = self._info(names)
        if info is None:
            return None
        size = int(info.get("size") or 0)
        mtime = next((s for k in _MTIME_KEYS if (s := _seconds(info.get(k))) is not None), None)
        marker: Hashable | None = next(
            (str(info[k]) for k in _TOKEN_KEYS if info.get(k) not in (None, "")), None
        )
        if marker is None and mtime is None and _kind(info) == "file":
            mtime = self._modified(names)
        if marker is None and mtime is not None:
            marker = mtime
        token = None if marker is None else (size, marker)
        return Stat(_kind(info), size, mtime, token)

    def stat_many(self, paths: list[Names]) -> list[Stat | None]:
        return [self.stat(names) for names in paths]

    def _modified(self, names: Names) -> float | None:
        try:
            return _seconds(self.fs.modified(self._path(names)))
        except (NotImplementedError, FileNotFoundError):
            return None

    def listdir(self, names: Names) -> list[Entry]:
        info = self._info(names) if names else {"type": "directory"}
        if info is None:
            raise FileNotFoundError(self._path(names))
        if _kind(info) != "dir":
            raise NotADirectoryError(self._path(names))
        try:
            found: list[dict[str, Any]] = self.fs.ls(self._path(names), detail=True)
        except FileNotFoundError:
            if names:
                raise
            return []  # the base itself does not exist yet: an empty workspace
        top = self._path(names)
        out = []
        for item in found:
            name = str(self.fs._strip_protocol(item["name"])).rstrip("/")
            if name == top or not name.startswith(top + "/"):
                continue
            rel = name[len(top) + 1 :]
            if rel and "/" not in rel:
                out.append(Entry(rel, _kind(item), int(item.get("size") or 0)))
        return sorted(out, key=lambda e: e.name)

    def remove(self, names: Names) -> None:
        info = self._info(names)
        if info is None:
            raise FileNotFoundError(self._path(names))
        if _kind(info) != "file":
            raise NotRegular(_kind(info))
        self.fs.rm_file(self._path(names))

    def walk(self, names: Names, max_files: int) -> tuple[list[tuple[str, int]], bool]:
        top = self._path(names)
        if names:
            info = self._info(names)
            if info is None:
                raise FileNotFoundError(top)
            if _kind(info) != "dir":
                raise NotADirectoryError(top)
        try:
            found: dict[str, dict[str, Any]] = self.fs.find(top, withdirs=False, detail=True)
        except FileNotFoundError:
            return [], False
        files: list[tuple[str, int]] = []
        for name, item in sorted(found.items()):
            name = str(self.fs._strip_protocol(name)).rstrip("/")
            if _kind(item) != "file" or not name.startswith(top + "/"):
                continue
            if len(files) >= max_files:
                return files, True
            files.append((name[len(top) + 1 :], int(item.get("size") or 0)))
        return files, False


def protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    proto = fs.protocol
    return (proto,) if isinstance(proto, str) else tuple(proto)
