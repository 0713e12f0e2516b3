"""Directory-tree operations of the local store: delete, listing and sweeping.

Deletes take the slot's flock like saves do, unlink the head first (so a crash mid-delete
leaves the key absent, never half there) and remove a session directory once it holds no
committed key, unlinking its lock file while holding it (a waiter then sees ``st_nlink == 0``
and starts again). Listing reads directory names only.
"""

from __future__ import annotations

import fcntl
import os
import stat
import threading
import time

from hookagent.errors import CorruptState, StoreUnavailable
from hookagent.store.base import SessionPage

from . import posixio as io
from .cache import HistoryCache, Seen, SlotLru
from .dircache import DirCache
from .layout import (
    FENCE,
    HEAD,
    LOCK,
    MORE,
    TORN_PREFIX,
    id_parts,
    is_log_name,
    is_private,
    log_name,
    parts_to_id,
    slot_parts,
)
from .listing import SessionIndex
from .records import Head, decode_head_file, head_length

RETRIES = 20
HEAD_MEMO_SLOTS, HEAD_MEMO_MAX = 256, 64 * 1024
"""Decoded heads remembered per store (by content), and the largest head file remembered."""
LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


_FIRST_READ = 4096


def head_prefix(fd: int, size: int) -> bytes:
    """The head's bytes of a head file of ``size`` bytes held open: the whole file, but only
    the head of a format-3 one (its record file follows it in the same inode). One ``pread``
    for a head up to 4 KiB, as before."""
    data = io.read_small(fd, min(size, _FIRST_READ))
    want = head_length(data, size)
    if want <= len(data):
        return data[:want]
    return data + io.pread_exact(fd, want - len(data), len(data))


def where_of(user_id: str, session_id: str, key: str) -> str:
    return f"user_id={user_id!r} session_id={session_id!r} key={key!r}"


class LocalTree:
    """Base of ``LocalCore``: everything that walks or removes directories."""

    dur: io.Durability
    cache: HistoryCache
    seen: SlotLru[Seen]
    _heads: dict[bytes, Head]
    _open_lock: threading.Lock
    index: SessionIndex
    dirs: DirCache

    def root(self) -> int:  # pragma: no cover - provided by LocalCore
        raise NotImplementedError

    def _read_head(self, kd: int, where: str) -> Head | None:
        """The committed head; decoded once per distinct content (heads rarely change)."""
        data = self._head_bytes(kd, where)
        if data is None:
            return None
        head = self._heads.get(data)
        if head is None:
            head = decode_head_file(data, where)
            if len(data) <= HEAD_MEMO_MAX:  # small heads only: at most 16 MiB in all
                if len(self._heads) >= HEAD_MEMO_SLOTS:
                    self._heads.clear()
                self._heads[data] = head
        return head

    def _head_bytes(self, kd: int, where: str) -> bytes | None:
        """The head file's content. A head is never written in place (a new one is renamed
        over it), so with ``kd`` leased from ``self.dirs`` the file stays open with it: an
        ``lstat`` of the name giving the held inode, then one ``pread`` of its size."""
        held, held_id = self.dirs.head(kd)
        if held >= 0:
            try:
                st = os.stat(HEAD, dir_fd=kd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if (st.st_dev, st.st_ino) == held_id:
                return head_prefix(held, st.st_size)
        try:
            fd = os.open(HEAD, io.READ_FLAGS, dir_fd=kd)
        except FileNotFoundError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                at = f"{where}: " if where else ""
                raise CorruptState(f"{at}{HEAD!r} in the store tree is not a regular file")
            data = head_prefix(fd, st.st_size)
        except BaseException:
            os.close(fd)
            raise
        if not self.dirs.keep_head(kd, fd, (st.st_dev, st.st_ino)):
            os.close(fd)
        return data

    # ------------------------------------------------------------------ delete

    def _clear_dir(self, fd: int) -> None:
        for entry in os.listdir(fd):
            io.rmtree_at(fd, entry)

    def _key_leaves(self, fd: int, prefix: list[str]) -> list[list[str]]:
        """Every key directory (as path parts) below a session directory."""
        out: list[list[str]] = []
        with os.scandir(fd) as it:
            entries = list(it)
        for entry in entries:
            if is_private(entry.name) or not entry.is_dir(follow_symlinks=False):
                continue
            parts = [*prefix, entry.name]
            if entry.name.endswith(MORE):
                sub = os.open(entry.name, io.DIR_FLAGS, dir_fd=fd)
                try:
                    out += self._key_leaves(sub, parts)
                finally:
                    os.close(sub)
            elif parts_to_id(parts) is not None:
                out.append(parts)
        return out

    def _has_key(self, sd: int) -> bool:
        for parts in self._key_leaves(sd, []):
            kd = io.walk(sd, parts, create=False, dur=self.dur)
            if kd is not None:
                try:
                    os.stat(HEAD, dir_fd=kd, follow_symlinks=False)
                    return True
                except FileNotFoundError:
                    pass
                finally:
                    os.close(kd)
        return False

    def _bare(self, fd: int) -> bool:
        """Whether a tree holds only directories and store-private leftovers: no head, no
        history, no ``.torn`` copy, no planted file or link (evidence is never removed)."""
        with os.scandir(fd) as it:
            entries = list(it)
        for entry in entries:
            if is_private(entry.name) and not entry.name.startswith(TORN_PREFIX):
                continue
            if not entry.is_dir(follow_symlinks=False):
                return False
            sub = os.open(entry.name, io.DIR_FLAGS, dir_fd=fd)
            try:
                if not self._bare(sub):
                    return False
            finally:
                os.close(sub)
        return True

    def _drop_if_empty(
        self, pd: int, name: str, sd: int, *, keep_fence: bool, strict: bool = True
    ) -> bool:
        """Remove a session directory that holds no committed key (caller holds its lock).

        ``strict`` (a failed save, a delete of one key): only a bare tree (``_bare``); else
        (a delete of the whole session, which removed every key) anything but a head."""
        if (not self._bare(sd) if strict else self._has_key(sd)) or (
            keep_fence and io.read_file(sd, FENCE) is not None
        ):
            return False
        self._clear_dir(sd)  # empty key dirs, temp files, the fence, the lock (we hold it)
        try:
            os.rmdir(name, dir_fd=pd)
        except OSError:
            return False  # someone created a new lock file meanwhile: they own it now
        if self.dur.poisoned is None:  # cleanup after a failed fsync must not fsync again
            self.dur.fsync(pd, "the user directory (session removal)")
        return True

    def delete(self, user_id: str, session_id: str, key: str | None) -> bool:
        self.index.forget(user_id, session_id)
        root = self.root()
        where = where_of(user_id, session_id, key or "*")
        sparts = slot_parts(user_id, session_id)
        try:
            for _ in range(RETRIES):
                fds: list[int] = []
                try:
                    pd = io.walk(root, sparts[:-1], create=False, dur=self.dur)
                    if pd is None:
                        return False
                    fds.append(pd)
                    sd = io.open_dir(pd, sparts[-1], create=False, dur=self.dur)
                    if sd is None:
                        return False
                    fds.append(sd)
                    try:
                        lk = io.track(os.open(LOCK, LOCK_FLAGS, 0o600, dir_fd=sd))
                    except FileNotFoundError:
                        continue
                    fds.append(lk)
                    fcntl.flock(lk, fcntl.LOCK_EX)
                    if os.fstat(lk).st_nlink == 0:
                        continue
                    leaves = self._key_leaves(sd, []) if key is None else [id_parts(key)]
                    existed = False
                    for parts in leaves:
                        existed = self._delete_key(sd, parts) or existed
                    self.cache.drop(user_id, session_id, key)
                    self.seen.drop(user_id, session_id, key)
                    self._drop_if_empty(
                        pd, sparts[-1], sd, keep_fence=key is not None, strict=key is not None
                    )
                    return existed
                finally:
                    for fd in reversed(fds):
                        io.close_fd(fd)
        except OSError as exc:
            raise io.mapped(exc, f"deleting {where}") from exc
        raise StoreUnavailable(f"{where}: the slot kept changing during the delete")

    def _delete_key(self, sd: int, parts: list[str]) -> bool:
        """Rename the key directory to a private temp name (durably: the key is gone from
        then on, and a delete killed half-way leaves no history without its head), then
        remove it."""
        kpd = io.walk(sd, parts[:-1], create=False, dur=self.dur)
        if kpd is None:
            return False
        try:
            kd = io.open_dir(kpd, parts[-1], create=False, dur=self.dur)  # (a link: ELOOP)
            if kd is None:
                return False
            try:
                os.stat(HEAD, dir_fd=kd, follow_symlinks=False)
                existed = True
            except FileNotFoundError:
                existed = False
            finally:
                os.close(kd)
            gone = io.tmp_name()
            os.rename(parts[-1], gone, src_dir_fd=kpd, dst_dir_fd=kpd)
            if existed:
                self.dur.fsync(kpd, "the key's parent directory (delete)")
            io.rmtree_at(kpd, gone)
            return existed
        finally:
            os.close(kpd)

    # ------------------------------------------------------------------ listing and sweeping

    def list_page(self, user_id: str, limit: int, cursor: str | None) -> SessionPage:
        """Sorted session ids holding a committed key, ``limit`` per page (``listing``)."""
        root = self.root()
        try:
            ud = io.walk(root, id_parts(user_id), create=False, dur=self.dur)
            if ud is None:
                return SessionPage((), None)
            try:
                return self.index.page(
                    ud, user_id, limit, cursor, lambda parts: self._session_has_state(ud, parts)
                )
            finally:
                os.close(ud)
        except OSError as exc:
            raise io.mapped(exc, f"listing the sessions of user_id={user_id!r}") from exc

    def _session_has_state(self, ud: int, parts: list[str]) -> bool:
        sd = io.walk(ud, parts, create=False, dur=self.dur)
        if sd is None:
            return False
        try:
            return self._has_key(sd)
        finally:
            os.close(sd)

    def sweep(self, older_than: float) -> int:
        try:
            return self._sweep(self.root(), older_than)
        except OSError as exc:
            raise io.mapped(exc, "sweeping temp files") from exc

    def _sweep_one(self, fd: int, older_than: float, now: float) -> int:
        """In one directory: stale temp files, and record files its head does not name."""
        removed = io.sweep_dir(fd, older_than, now)
        names = os.listdir(fd)
        if HEAD not in names:
            return removed
        try:
            current = self._read_head(fd, "sweep")
        except CorruptState:
            return removed  # never remove anything next to a head we cannot read
        if current is None:
            return removed
        for name in names:
            if is_log_name(name) and name != log_name(current.gen):
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if now - st.st_mtime >= older_than:
                    io.unlink_quiet(fd, name)
                    removed += 1
        return removed

    def _sweep(self, fd: int, older_than: float) -> int:
        """Sweep ``fd`` and every directory below it (symlinks are never followed).

        A slot directory is swept under its flock, taken without waiting: a writer in flight
        there (whose new generation file no head names yet) makes the sweep skip that slot.
        """
        try:
            lk = io.track(os.open(LOCK, io.READ_FLAGS, dir_fd=fd))
        except FileNotFoundError:
            lk = -1  # not a slot directory
        try:
            if lk >= 0:
                try:
                    fcntl.flock(lk, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return 0  # a writer holds the slot: sweep it another time
            removed = self._sweep_one(fd, older_than, time.time())
            for name in os.listdir(fd):
                if is_private(name):
                    continue
                try:
                    sub = os.open(name, io.DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # a file, a symlink (never followed) or gone
                try:
                    removed += self._sweep(sub, older_than)
                finally:
                    os.close(sub)
            return removed
        finally:
            if lk >= 0:
                io.close_fd(lk)
