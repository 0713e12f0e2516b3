"""The local-disk backend: every name below the base directory is opened relative to its
parent's file descriptor with ``O_NOFOLLOW``, so a symbolic link anywhere below the base is
refused, never followed, and cannot be swapped in between a check and a use (there is no
check: the open itself refuses). Writes go to a temporary file renamed over the target.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat as st
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .backend import Entry, Kind, LinkRefused, Names, NotRegular, ParentNotDir, Stat, TooLarge
from .paths import MAX_DEPTH

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
"""Non-blocking: a FIFO planted in the tree opens at once and is then refused (not regular)."""
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
TMP_PREFIX = ".hookagent-tmp-"
"""Temporary files of an unfinished write; never listed."""


def _kind(mode: int) -> Kind:
    if st.S_ISREG(mode):
        return "file"
    if st.S_ISDIR(mode):
        return "dir"
    if st.S_ISLNK(mode):
        return "link"
    return "other"


def _stat_at(dfd: int, name: str) -> Stat | None:
    try:
        info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    token = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    # ctime too: an edit that puts the old mtime back (utime) still moves the ctime
    changed = max(info.st_mtime, info.st_ctime)
    return Stat(_kind(info.st_mode), info.st_size, changed, token)


class LocalBackend:
    """A directory on this host's disks."""

    shared = False
    blocking = True

    def __init__(self, base: str | os.PathLike[str], *, shared: bool = False) -> None:
        self.base = Path(base).expanduser().absolute()
        self.url = self.base.as_uri()
        self.shared = shared
        self.stat_blocking = shared
        """A few ``fstatat`` calls on a local disk: made on the loop. A directory declared
        shared (a network mount) may wait on the network: a worker thread then."""

    # ---- walking names
    def _base_fd(self, create: bool) -> int:
        if create:
            self.base.mkdir(parents=True, exist_ok=True)
        return os.open(self.base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def _child_dir(self, fd: int, name: str, create: bool) -> int:
        try:
            return os.open(name, _DIR, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass  # made by a concurrent writer: open it below like any directory
            return self._child_dir(fd, name, False)
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if st.S_ISLNK(info.st_mode):
                raise LinkRefused(name) from None
            raise ParentNotDir(name) from None

    @contextmanager
    def _dir(self, names: Names, create: bool = False) -> Iterator[int]:
        """An fd of the directory ``names`` (made with its parents if ``create``)."""
        fd = self._base_fd(create)
        try:
            for name in names:
                child = self._child_dir(fd, name, create)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _open_file(self, dfd: int, name: str, flags: int, mode: int = 0o644) -> int:
        try:
            fd = os.open(name, flags, mode, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LinkRefused(name) from None
            if exc.errno == errno.EISDIR:
                raise NotRegular("dir") from None
            if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
                raise NotRegular("other") from None
            raise
        info = os.fstat(fd)
        if not st.S_ISREG(info.st_mode):
            os.close(fd)
            raise NotRegular(_kind(info.st_mode))
        return fd

    # ---- operations
    def read(self, names: Names, limit: int) -> bytes:
        with self._dir(names[:-1]) as dfd:
            fd = self._open_file(dfd, names[-1], _READ)
        try:
            size = os.fstat(fd).st_size
            if size > limit:
                raise TooLarge(size, limit)
            chunks: list[bytes] = []
            got = 0
            while got <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            if got > limit:  # grew while we read it
                raise TooLarge(got, limit)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write(self, names: Names, data: bytes) -> None:
        with self._dir(names[:-1], create=True) as dfd:
            name = names[-1]
            try:
                old = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and st.S_ISDIR(old.st_mode):
                raise NotRegular("dir")
            tmp = f"{TMP_PREFIX}{secrets.token_hex(8)}"
            fd = os.open(tmp, _NEW, 0o644, dir_fd=dfd)
            try:
                try:
                    if old is not None and st.S_ISREG(old.st_mode):
                        os.fchmod(fd, st.S_IMODE(old.st_mode))
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                # rename replaces a link itself, never what it points to
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise

    def append(self, names: Names, data: bytes, limit: int) -> int:
        with self._dir(names[:-1], create=True) as dfd:
            fd = self._open_file(dfd, names[-1], _APPEND)
        try:
            size = os.fstat(fd).st_size
            if size + len(data) > limit:
                raise TooLarge(size + len(data), limit)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            return size + len(data)
        finally:
            os.close(fd)

    def stat(self, names: Names) -> Stat | None:
        return self.stat_many([names])[0]

    def stat_many(self, paths: list[Names]) -> list[Stat | None]:
        """``stat`` of several paths, opening each parent directory once."""
        out: list[Stat | None] = [None] * len(paths)
        groups: dict[Names, list[int]] = {}
        for i, names in enumerate(paths):
            groups.setdefault(names[:-1], []).append(i)
        for parent, indexes in groups.items():
            try:
                with self._dir(parent) as dfd:
                    for i in indexes:
                        out[i] = _stat_at(dfd, paths[i][-1])
            except (FileNotFoundError, ParentNotDir):
                continue
        return out

    def root_stat(self, names: Names) -> Stat | None:
        """``stat`` that also accepts ``()`` (the base itself)."""
        if names:
            return self.stat(names)
        try:
            with self._dir(()) as fd:
                info = os.fstat(fd)
        except FileNotFoundError:
            return None
        return Stat("dir", info.st_size, info.st_mtime)

    def listdir(self, names: Names) -> list[Entry]:
        with self._dir(names) as dfd, os.scandir(dfd) as it:
            out = []
            for e in it:
                if e.name.startswith(TMP_PREFIX):
                    continue
                info = e.stat(follow_symlinks=False)
                out.append(Entry(e.name, _kind(info.st_mode), info.st_size))
        return sorted(out, key=lambda e: e.name)

    def remove(self, names: Names) -> None:
        with self._dir(names[:-1]) as dfd:
            info = os.stat(names[-1], dir_fd=dfd, follow_symlinks=False)
            if st.S_ISDIR(info.st_mode):
                raise NotRegular("dir")
            os.unlink(names[-1], dir_fd=dfd)  # a link is removed itself, never its target

    def walk(self, names: Names, max_files: int) -> tuple[list[tuple[str, int]], bool]:
        found: list[tuple[str, int]] = []
        with self._dir(names) as top:
            return found, self._walk(top, "", found, max_files, MAX_DEPTH)

    def _walk(
        self, dfd: int, prefix: str, found: list[tuple[str, int]], limit: int, depth: int
    ) -> bool:
        with os.scandir(dfd) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.name.startswith(TMP_PREFIX):
                continue
            info = e.stat(follow_symlinks=False)
            rel = prefix + e.name
            if st.S_ISREG(info.st_mode):
                if len(found) >= limit:
                    return True
                found.append((rel, info.st_size))
            elif st.S_ISDIR(info.st_mode) and depth > 1:
                try:
                    sub = os.open(e.name, _DIR, dir_fd=dfd)
                except OSError:
                    continue  # replaced or unreadable meanwhile: skipped, never followed
                try:
                    if self._walk(sub, rel + "/", found, limit, depth - 1):
                        return True
                finally:
                    os.close(sub)
        return False
