"""Listing a user's sessions at O(page): a per-instance sorted index of the user directory.

Each store instance keeps, per user, the sorted session ids read from the user directory,
with the directory's stat signature (inode, mtime, ctime, link count; and those of every
``+`` directory of a long id). A page re-stats those directories (no listing) and, while they
are unchanged, bisects to the cursor and checks only the page's own sessions: one lstat of
each session directory, which a key's first save (renamed in) and delete (renamed away)
change, with the head looked up again only when it did. Any change (another
process created or removed a session) rebuilds the index: one scan of the directory.

A change made within the same timestamp tick as the scan could leave the signature as it was,
so an index whose directory changed less than ``racy_ns`` before the scan is used for that one
page only and not kept (as git does for a racily clean index). Nothing is written to disk, so
there is nothing to keep crash-safe.

A session's first sighting costs three lstats (its directory, its ``agent_state`` key
directory, the head), except for the sessions this instance created itself: their first save
records the session directory's signature right after its commit (``created``), and a page
that finds that same signature trusts it (one lstat). That record is taken within the clock
tick of the commit, so it is kept only where a directory's link count counts its
subdirectories (ext4, XFS, tmpfs: the key directory makes it at least 3): a later delete of
the key (its directory renamed away and removed) then changes the signature even within the
same tick. What is left is a delete and a new subdirectory in that session within that
tick, both after the commit: such a page may list the session until its directory changes
again. Why: a listing right after a bulk creation verified every new session three times
over (issue 13: 3.2x SQLite's time).
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import attrs
from hookagent.store.base import AGENT_STATE_KEY, SessionPage

from . import posixio as io
from .layout import HEAD, MORE, id_parts, is_private, parts_to_id

Sig = tuple[int, int, int, int, int]
_PLAIN = re.compile(r"[a-z0-9_-]{1,240}")
"""An encoded id that is its own decoding (``encode_id`` keeps these characters as they are)."""
TICK_NS = 20_000_000
"""Headroom over the kernel's coarse clock tick (at most 10 ms) behind a file's timestamps."""
INDEX_IDS = 200_000
"""Session ids kept in all the indexes of one store instance (least recently used out)."""
CREATED_IDS = 20_000
"""Creations remembered per store instance for listings (``created``; about 0.5 KiB each
with uuid ids, 9 MiB when full; the least recent forgotten first: a forgotten one is verified
as any other session is)."""


def signature(st: os.stat_result) -> Sig:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink)


def counts_subdirs(st: os.stat_result) -> bool:
    """A session directory holding its key directory, whose link count counts it (2 + its
    subdirectories, as on ext4, XFS and tmpfs; btrfs always says 1)."""
    return st.st_nlink >= 3


def racy_ns(mtime_ns: int) -> int:
    """How long after its last change a directory's signature is trusted: two of its
    timestamp granules (guessed from the trailing zeros: 1 s on ext3, 2 s on FAT) plus a tick."""
    granule = 1
    while granule < 10**9 and mtime_ns % (granule * 10) == 0:
        granule *= 10
    return 2 * granule + TICK_NS


@attrs.define
class Index:
    ids: list[str]
    parts: list[list[str]]
    dirs: list[tuple[str, Sig]]
    """Each scanned directory (relative path, "" for the user's) with its signature."""
    state: list[Sig | None]
    """Per session: its directory's signature when its ``agent_state`` head was last seen
    (a delete of that key renames it away in this very directory, changing it)."""


class SessionIndex:
    """The indexes of one store instance (thread-safe; an index is replaced, never edited)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: OrderedDict[str, Index] = OrderedDict()
        self.scans = 0
        """How many user-directory scans were made (tests pin O(page) with it)."""
        self._key = "/".join(id_parts(AGENT_STATE_KEY))
        self._created: OrderedDict[tuple[str, str], Sig] = OrderedDict()
        """(user_id, session_id) -> the session directory's signature right after this
        instance's first save of its ``agent_state`` key committed."""

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._created.clear()

    def created(self, user_id: str, session_id: str, st: os.stat_result) -> None:
        """This instance's first save of the session's ``agent_state`` key just committed;
        ``st`` is the session directory's (f)stat taken right after that commit."""
        if not counts_subdirs(st):  # a delete in the same tick could leave the signature
            return
        with self._lock:
            self._created[(user_id, session_id)] = signature(st)
            self._created.move_to_end((user_id, session_id))
            while len(self._created) > CREATED_IDS:
                self._created.popitem(last=False)

    def forget(self, user_id: str, session_id: str) -> None:
        """A delete by this instance: its record of the session's creation is void."""
        with self._lock:
            self._created.pop((user_id, session_id), None)

    def page(
        self, ud: int, user_id: str, limit: int, cursor: str | None,
        has_state: Callable[[list[str]], bool],
    ) -> SessionPage:  # fmt: skip
        """Up to ``limit`` ids after ``cursor`` ("" or None: the first page) that hold a
        committed key; ``has_state`` is the full check for a session the fast one misses."""
        index = self._current(ud, user_id)
        at = bisect.bisect_right(index.ids, cursor) if cursor else 0
        ids: list[str] = []
        for i in range(at, len(index.ids)):
            if not self._has_state(ud, user_id, index, i, has_state):
                continue  # a directory left by a crashed first save, or a deleted key's
            if len(ids) == limit:
                return SessionPage(tuple(ids), ids[-1])
            ids.append(index.ids[i])
        return SessionPage(tuple(ids), None)

    def _has_state(
        self, ud: int, user_id: str, index: Index, i: int,
        has_state: Callable[[list[str]], bool],
    ) -> bool:  # fmt: skip
        """Whether session ``i`` holds a committed key: one lstat of its directory while it
        is unchanged since its ``agent_state`` head was seen (or since this instance created
        it), else the check itself (that head in two lstats, or ``has_state`` for the other
        keys)."""
        rel = "/".join(index.parts[i])
        now = time.time_ns()
        try:
            st = os.stat(rel, dir_fd=ud, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
        sig = signature(st)
        if index.state[i] == sig:
            return True
        if self._created.get((user_id, index.ids[i])) == sig:
            index.state[i] = sig
            return True
        if not self._has_main_key(ud, rel):
            return has_state(index.parts[i])  # (never kept: a long key lives one level down)
        if now - st.st_mtime_ns >= racy_ns(st.st_mtime_ns):
            index.state[i] = sig
        return True

    def _has_main_key(self, ud: int, rel: str) -> bool:
        """The usual case in two lstats: the session's ``agent_state`` key has a head."""
        path = rel + "/" + self._key
        try:
            kst = os.stat(path, dir_fd=ud, follow_symlinks=False)
            hst = os.stat(path + "/" + HEAD, dir_fd=ud, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return stat.S_ISDIR(kst.st_mode) and stat.S_ISREG(hst.st_mode)

    def _current(self, ud: int, user_id: str) -> Index:
        with self._lock:
            index = self._users.get(user_id)
            if index is not None:
                self._users.move_to_end(user_id)
        if index is not None and self._unchanged(ud, index):
            return index
        now = time.time_ns()
        index = self._scan(ud)
        if all(now - sig[2] >= racy_ns(sig[2]) for _, sig in index.dirs):
            with self._lock:
                self._users[user_id] = index
                total = sum(len(i.ids) for i in self._users.values())
                while total > INDEX_IDS and len(self._users) > 1:
                    _, gone = self._users.popitem(last=False)
                    total -= len(gone.ids)
        else:
            with self._lock:
                self._users.pop(user_id, None)
        return index

    def _unchanged(self, ud: int, index: Index) -> bool:
        for rel, sig in index.dirs:
            try:
                st = os.fstat(ud) if not rel else os.stat(rel, dir_fd=ud, follow_symlinks=False)
            except OSError:
                return False
            if signature(st) != sig:
                return False
        return True

    def _scan(self, ud: int) -> Index:
        """Every session id below the user directory, sorted (directory names only)."""
        self.scans += 1
        dirs: list[tuple[str, Sig]] = []
        found: list[tuple[str, list[str]]] = []
        self._scan_dir(ud, "", [], dirs, found)
        found.sort()
        return Index([sid for sid, _ in found], [p for _, p in found], dirs, [None] * len(found))

    def _scan_dir(
        self, fd: int, rel: str, prefix: list[str], dirs: list[tuple[str, Sig]],
        found: list[tuple[str, list[str]]],
    ) -> None:  # fmt: skip
        dirs.append((rel, signature(os.fstat(fd))))  # before the scan: a later change shows
        with os.scandir(fd) as it:
            entries = [e.name for e in it if e.is_dir(follow_symlinks=False)]
        for name in entries:
            if is_private(name):
                continue
            if name.endswith(MORE):  # a long id's leading chunk
                sub = os.open(name, io.DIR_FLAGS, dir_fd=fd)
                try:
                    at = f"{rel}/{name}" if rel else name
                    self._scan_dir(sub, at, [*prefix, name], dirs, found)
                finally:
                    os.close(sub)
            elif not prefix and _PLAIN.fullmatch(name):
                found.append((name, [name]))
            else:
                sid = parts_to_id([*prefix, name])
                if sid is not None:
                    found.append((sid, [*prefix, name]))
