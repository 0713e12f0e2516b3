"""Cached directory fds of the local store, each checked by one ``lstat`` before every use.

A walk from the root to a key directory opens and closes one directory per level (user,
session, key: six syscalls per load or save). This cache keeps the fds open and, at each use,
checks the name against the held inode instead: ``lstat(name, dir_fd=parent)`` must give the
same ``(st_dev, st_ino)`` as the cached fd (one syscall per level). The held fd pins the inode,
so its number cannot be reused while cached: a directory removed and re-created (by this store,
another process or an operator), renamed away, or replaced by a symlink never matches, and the
walk then opens the name again the usual way (``O_NOFOLLOW``, refusing symlinks). Every level
is checked from the root down, so a hit proves the same path binding an open walk would.

Each entry may also carry ``durable``: its name in its parent was made durable (the parent
fsynced after the entry existed, or a committed head was found below it). A first save then
skips the ancestors' fsyncs for entries known durable (the root's, once per user per store
instance). That trusts what the store itself never does: rename a user or session directory
away and back (a new entry under the old name with the same inode).

fds in use are leased (a count per entry): an entry evicted or replaced while a thread uses it
is closed by the last ``release``, never under a thread's feet (a closed fd's number is soon
reused by another open). A shared fd is only ever used as a ``dir_fd`` and for listings under
the slot's lock; a listing without it (``orphan_check`` in a load) goes through its own open
of the directory (``posixio.listdir_own``): ``listdir(fd)`` shares the fd's position.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Final

import attrs

from . import posixio as io

DIR_SLOTS: Final = 256
"""Directories kept open per store instance at most, and at most 1/16 of RLIMIT_NOFILE (a key
directory's entry holds up to three fds: itself, its head and its hint)."""


@attrs.define(eq=False)
class _Entry:
    fd: int
    dev: int
    ino: int
    refs: int = 0
    live: bool = True
    """False once evicted or replaced: the last release closes the fd."""
    durable: bool = False
    hint: int = -1
    """A key directory's ``.end`` hint, opened read-write once (``-1``: not held)."""
    head: int = -1
    """A key directory's ``head`` as last opened (``-1``: not held), and its inode."""
    head_id: tuple[int, int] = (0, 0)


_CACHES: weakref.WeakSet[DirCache] = weakref.WeakSet()


def _after_fork() -> None:
    for cache in list(_CACHES):
        cache.forked()


os.register_at_fork(after_in_child=_after_fork)


def _slots() -> int:
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return 0
    if soft == resource.RLIM_INFINITY:
        return DIR_SLOTS
    return max(0, min(DIR_SLOTS, soft // 16))


class DirCache:
    """Path parts (from the root) -> an open directory fd, LRU, thread-safe."""

    def __init__(self, slots: int | None = None) -> None:
        self.slots = _slots() if slots is None else slots
        self._data: OrderedDict[tuple[str, ...], _Entry] = OrderedDict()
        self._leased: dict[int, _Entry] = {}
        self._lock = threading.Lock()
        _CACHES.add(self)

    def forked(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held by a thread the
        child does not have). The inherited fds stay valid: cached ones are kept, those only
        leased by the parent's threads (evicted meanwhile) are closed."""
        self._lock = threading.Lock()
        for entry in list(self._leased.values()):
            if not entry.live:
                self._close(entry)
        for entry in self._data.values():
            entry.refs = 0
        self._leased = {e.fd: e for e in self._data.values()}

    def acquire(self, parent: int, key: tuple[str, ...]) -> int | None:
        """The cached fd of ``key`` if its name in ``parent`` is still the same directory
        (leased: hand it back with ``release``); None on a miss."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            self._data.move_to_end(key)
            entry.refs += 1
        try:
            st = os.stat(key[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        except BaseException:
            self.release(entry.fd)
            raise
        if st is None or st.st_ino != entry.ino or st.st_dev != entry.dev:
            with self._lock:
                if self._data.get(key) is entry:
                    del self._data[key]
                    entry.live = False
            self.release(entry.fd)
            return None
        return entry.fd

    def insert(self, key: tuple[str, ...], fd: int) -> int:
        """Cache ``fd`` (just opened, owned by the caller) under ``key``; returns it leased.
        With no room (``slots`` 0) the fd stays the caller's: ``release`` closes it."""
        if not self.slots:
            return fd
        st = os.fstat(fd)
        entry = _Entry(fd, st.st_dev, st.st_ino, refs=1)
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                old.live = False
                if not old.refs:
                    self._close(old)
            self._data[key] = entry
            self._leased[fd] = entry
            while len(self._data) > self.slots:
                _, gone = self._data.popitem(last=False)
                gone.live = False
                if not gone.refs:
                    self._close(gone)
        return fd

    def _close(self, entry: _Entry) -> None:
        self._leased.pop(entry.fd, None)
        if entry.hint >= 0:
            os.close(entry.hint)
            entry.hint = -1
        if entry.head >= 0:
            os.close(entry.head)
            entry.head = -1
        os.close(entry.fd)

    def release(self, fd: int) -> None:
        """Hand back a leased fd, or close an fd this cache does not hold."""
        with self._lock:
            entry = self._leased.get(fd)
            if entry is not None:
                entry.refs -= 1
                if not entry.live and entry.refs <= 0:
                    self._close(entry)
                return
        os.close(fd)

    def hint(self, fd: int) -> int:
        """The ``.end`` fd held with the leased key directory ``fd``, or -1. Valid while
        ``fd`` is leased (it closes with it)."""
        with self._lock:
            entry = self._leased.get(fd)
            return entry.hint if entry is not None and entry.live else -1

    def keep_hint(self, fd: int, hint: int) -> bool:
        """Hold ``hint`` (an open ``.end``) with the leased key directory ``fd``; False if
        it cannot be held (the caller closes it)."""
        with self._lock:
            entry = self._leased.get(fd)
            if entry is None or not entry.live or entry.hint >= 0:
                return False
            entry.hint = hint
            return True

    def head(self, fd: int) -> tuple[int, tuple[int, int]]:
        """The ``head`` fd held with the leased key directory ``fd`` and its ``(st_dev,
        st_ino)``, or -1. Valid while ``fd`` is leased."""
        with self._lock:
            entry = self._leased.get(fd)
            if entry is None or not entry.live:
                return -1, (0, 0)
            return entry.head, entry.head_id

    def keep_head(self, fd: int, head: int, head_id: tuple[int, int]) -> bool:
        """Hold ``head`` (an open ``head`` file) with the leased key directory ``fd``,
        replacing the one held only when no other thread leases the directory (it may be
        reading the old one); False if not held (the caller closes it)."""
        with self._lock:
            entry = self._leased.get(fd)
            if entry is None or not entry.live or (entry.head >= 0 and entry.refs != 1):
                return False
            if entry.head >= 0:
                os.close(entry.head)
            entry.head, entry.head_id = head, head_id
            return True

    def drop_head(self, fd: int) -> None:
        """Close the ``head`` held with the leased key directory ``fd`` once a rewrite has
        replaced it (a format-3 head is its record file's inode: held, it would keep the
        superseded history on disk), unless another thread leases the directory."""
        with self._lock:
            entry = self._leased.get(fd)
            if entry is None or entry.head < 0 or entry.refs != 1:
                return
            os.close(entry.head)
            entry.head, entry.head_id = -1, (0, 0)

    def durable(self, key: tuple[str, ...], fd: int) -> bool:
        """Whether ``key``'s name in its parent is known durable (``fd``: its leased fd)."""
        with self._lock:
            entry = self._data.get(key)
            return entry is not None and entry.fd == fd and entry.durable

    def mark_durable(self, key: tuple[str, ...], fd: int) -> None:
        with self._lock:
            entry = self._data.get(key)
            if entry is not None and entry.fd == fd:
                entry.durable = True

    def clear(self) -> None:
        """Close every fd not in use (those in use close at their release)."""
        with self._lock:
            for entry in self._data.values():
                entry.live = False
                if not entry.refs:
                    self._close(entry)
            self._data.clear()


def walk(
    cache: DirCache, root: int, base: tuple[str, ...], parts: list[str], *, create: bool,
    dur: io.Durability, pending: list[int] | None = None,
) -> int | None:  # fmt: skip
    """``posixio.walk`` through the cache: the fd of ``root/parts...`` (leased from the cache
    or owned: either way handed back with ``cache.release``), or None when a component is
    absent. ``root`` is the fd of the path ``base`` (the store root: ``()``); it is never
    released here."""
    fd, key = root, base
    try:
        for name in parts:
            key = (*key, name)
            nxt = cache.acquire(fd, key)
            if nxt is None:
                opened = io.open_dir(fd, name, create=create, dur=dur, pending=pending)
                nxt = None if opened is None else cache.insert(key, opened)
            if fd != root:
                cache.release(fd)
            fd = root
            if nxt is None:
                return None
            fd = nxt
    except BaseException:
        if fd != root:
            cache.release(fd)
        raise
    return fd if fd != root else os.dup(root)
