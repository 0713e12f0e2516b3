"""Crash-safe POSIX primitives, all relative to directory fds and never following a symlink.

Everything below the store root is opened with ``dir_fd`` + ``O_NOFOLLOW`` one component at a
time, so a symlink planted anywhere under the root is refused (``ELOOP``) instead of followed,
and long nested paths never hit ``PATH_MAX``. ``os.fsync`` is looked up at call time (tests
replace it). An fsync failure poisons the ``Durability`` object: the caller's store handle then
refuses every later operation, and the same data is never fsynced again (fsyncgate).
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Sequence

from hookagent.errors import (
    CorruptState,
    SessionStoreError,
    StorageDurabilityError,
    StorageFull,
    StoreUnavailable,
)

from . import hops
from .layout import TMP_PREFIX

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
"""Non-blocking: a FIFO planted in the tree is opened at once, then refused (not regular)."""
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


_LOCKS: set[int] = set()
"""Open slot-lock fds (a flock belongs to the open file, which a fork shares with the child)."""


def track(fd: int) -> int:
    """Register a slot-lock fd, so that a forked child closes its copy of it."""
    _LOCKS.add(fd)
    return fd


def close_fd(fd: int) -> None:
    """Close an fd (forgetting it first if it is a tracked lock fd)."""
    _LOCKS.discard(fd)
    os.close(fd)


def _close_locks_in_child() -> None:
    """A child forked while a thread held a slot's flock would hold it until it exits: its
    copies are closed (never unlocked: that would release the parent's lock too)."""
    for fd in list(_LOCKS):
        try:
            os.close(fd)
        except OSError:
            pass
    _LOCKS.clear()


os.register_at_fork(after_in_child=_close_locks_in_child)


class Durability:
    """The poison flag of one store handle."""

    def __init__(self) -> None:
        self.poisoned: str | None = None

    def check(self) -> None:
        if self.poisoned is not None:
            raise StorageDurabilityError(
                f"this store handle is poisoned by an earlier fsync failure ({self.poisoned}); "
                "open a new store after checking the disk"
            )

    def fsync(self, fd: int, what: str, *, here: bool = False) -> None:
        """``os.fsync(fd)``, in a worker when the caller runs inline on the loop's thread
        (``hops``); ``here``: on this thread always (the caller holds a threading lock)."""
        self.check()  # never fsync again after a failure: the data's fate is unknown
        try:
            if here:
                os.fsync(fd)
            else:
                hops.disk_wait(_fsync, fd)
        except OSError as exc:
            raise self._poison(what, exc) from exc

    def fsync_all(self, items: Sequence[tuple[int, str]]) -> None:
        """``fsync`` of each ``(fd, what)`` in order, in one wait: one thread hop for all
        when inline (``hops``). The first failure poisons the handle; the rest are not run."""
        self.check()
        failed = hops.disk_wait(_fsync_each, items)
        if failed is not None:
            what, exc = failed
            raise self._poison(what, exc) from exc

    def _poison(self, what: str, exc: OSError) -> StorageDurabilityError:
        self.poisoned = f"fsync of {what}: {exc}"
        return StorageDurabilityError(
            f"fsync of {what} failed ({exc}); the data may not be durable, the store handle "
            "is poisoned and the write is not retried"
        )


def _fsync(fd: int) -> None:
    os.fsync(fd)  # (looked up per call: tests replace it)


def _fsync_each(items: Sequence[tuple[int, str]]) -> tuple[str, OSError] | None:
    for fd, what in items:
        try:
            _fsync(fd)
        except OSError as exc:
            return what, exc
    return None


def lock_exclusive(fd: int) -> None:
    """``flock(fd, LOCK_EX)``: at once when free, else waiting in a worker when inline."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        hops.lock_wait(fcntl.flock, fd, fcntl.LOCK_EX)


def mapped(exc: OSError, what: str) -> SessionStoreError:
    """The typed error for an OS error met while doing ``what``."""
    if exc.errno in _FULL:
        return StorageFull(f"{what}: the storage is full ({exc.strerror}); nothing was committed")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return CorruptState(f"{what}: refusing a symlink or non-directory in the store tree")
    return StoreUnavailable(f"{what}: {exc}")


def make_root(path: str | os.PathLike[str], dur: Durability) -> None:
    """Create the store root and every missing parent with mode 0700, then make each new entry
    durable (its parent fsynced). Directories that exist are left as they are (never chmodded).

    An existing parent this process may write into but not read (mode ``-wx``) cannot be
    opened to fsync it: that fsync is skipped, every time alike (the entry is made; its
    durability then rests on the filesystem, as for any directory made by ``mkdir -p``).
    """
    missing: list[str] = []
    at = os.fspath(path)
    if not os.path.isabs(at):  # (the store passes absolute roots: a deleted cwd is no matter)
        at = os.path.join(os.getcwd(), at)  # (not abspath: ``..`` after a symlink stays as is)
    while not os.path.lexists(at):
        missing.append(at)
        up = os.path.dirname(at)
        if up == at:
            break
        at = up
    for name in reversed(missing):
        try:
            os.mkdir(name, 0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs
        try:
            fd = os.open(os.path.dirname(name), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except PermissionError:
            continue  # a write-only parent: see above
        try:
            dur.fsync(fd, "a directory (new store root or parent)", here=True)
        finally:
            os.close(fd)


def open_dir(
    parent: int, name: str, *, create: bool, dur: Durability, pending: list[int] | None = None
) -> int | None:
    """Open (optionally create, durably) one directory below ``parent``; None if absent.

    With ``pending``, a parent that got a new entry is not fsynced here: a duplicate of its fd
    is added to ``pending`` and the caller fsyncs them all before its commit point (one
    journal commit for several new directories instead of one each).
    """
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            return None
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    else:
        if pending is None:
            dur.fsync(parent, "a directory (new entry)")
        else:
            pending.append(os.dup(parent))
    return os.open(name, DIR_FLAGS, dir_fd=parent)


def walk(
    root: int, parts: list[str], *, create: bool, dur: Durability, pending: list[int] | None = None
) -> int | None:
    """The fd of ``root/parts...`` (caller closes it), or None when a component is absent."""
    fd, owned = root, False
    try:
        for name in parts:
            nxt = open_dir(fd, name, create=create, dur=dur, pending=pending)
            if owned:
                os.close(fd)
            fd, owned = root, False
            if nxt is None:
                return None
            fd, owned = nxt, True
    except BaseException:
        if owned:
            os.close(fd)
        raise
    return fd if owned else os.dup(root)


def read_file(dir_fd: int, name: str, where: str = "") -> bytes | None:
    """The whole content of a regular file, or None if absent (``where`` names the slot)."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            at = f"{where}: " if where else ""
            raise CorruptState(f"{at}{name!r} in the store tree is not a regular file")
        # head and fence are replaced by rename; ``.end`` is written in place, but a torn or
        # mixed read fails its crc and counts as no hint
        return _pread(fd, st.st_size, 0)
    finally:
        os.close(fd)


def _pread(fd: int, length: int, offset: int) -> bytes:
    first = os.pread(fd, length, offset)
    if len(first) == length or not first:
        return first
    out = bytearray(first)
    while len(out) < length:
        chunk = os.pread(fd, length - len(out), offset + len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def listdir_own(fd: int) -> list[str]:
    """``os.listdir`` of a directory through a fresh open of it: ``listdir(fd)`` reads through
    a duplicate sharing ``fd``'s position, so two threads listing one shared fd (a cached
    directory fd) would mix their reads."""
    own = os.open(".", DIR_FLAGS, dir_fd=fd)
    try:
        return os.listdir(own)
    finally:
        os.close(own)


def read_small(fd: int, length: int) -> bytes:
    """The first ``length`` bytes of a small file (a head, a hint) held open."""
    return _pread(fd, length, 0)


def pread_exact(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes at ``offset`` (fewer only at the end of the file)."""
    return _pread(fd, length, offset)


def write_all(fd: int, data: bytes, offset: int | None = None) -> None:
    view = memoryview(data)
    done = 0
    while done < len(view):
        if offset is None:
            done += os.write(fd, view[done:])
        else:
            done += os.pwrite(fd, view[done:], offset + done)


def tmp_name() -> str:
    return f"{TMP_PREFIX}{os.getpid()}.{secrets.token_hex(8)}"


def replace_file(dir_fd: int, name: str, data: bytes, dur: Durability, what: str) -> None:
    """Temp file (O_EXCL, 0600) in the same directory, fsync, rename over ``name``.

    The rename is the commit point; the caller fsyncs the directory to make it durable. On an
    error before the rename the temp file is removed and ``name`` is untouched.
    """
    tmp = tmp_name()
    fd = os.open(tmp, NEW_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        try:
            write_all(fd, data)
            dur.fsync(fd, f"{what} (temp file)")
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        unlink_quiet(dir_fd, tmp)
        raise


def unlink_quiet(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def rmtree_at(parent: int, name: str) -> None:
    """Remove ``parent/name`` recursively, never following a symlink (a link is unlinked)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        unlink_quiet(parent, name)
        return
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    try:
        for entry in os.listdir(fd):
            rmtree_at(fd, entry)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass


def sweep_dir(fd: int, older_than: float, now: float | None = None) -> int:
    """Remove stale temp files and directories (a first save or a delete killed half-way)
    in one directory; returns how many."""
    now = time.time() if now is None else now
    removed = 0
    for name in os.listdir(fd):
        if not name.startswith(TMP_PREFIX):
            continue
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if now - st.st_mtime >= older_than:
            if stat.S_ISDIR(st.st_mode):
                rmtree_at(fd, name)
            else:
                unlink_quiet(fd, name)
            removed += 1
    return removed
