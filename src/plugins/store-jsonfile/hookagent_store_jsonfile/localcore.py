"""The local-disk store's synchronous core: the save protocol and loads (format 2).

Save (under the slot's exclusive flock): read the head and any commit frames after it; check
fence and version; then either

* append: one commit frame (new messages + state head) written at the end of the last commit
  of the record file (dropping an uncommitted tail a killed writer left), then one fsync (the
  commit point) and an unsynced ``.end`` hint of where it ends; or
* compaction (an append once the frames after the head outweigh 1/8 of its base) or rewrite:
  a fresh ``h<new gen>.log`` (O_EXCL), fsync, a new head by temp file + fsync + ``os.replace``
  (the commit point), fsync of the directory (three fsyncs, a new generation).

Reads take no lock for bytes up to the hint (or already cached); bytes beyond it are read under
the flock taken shared without waiting (see ``localread``).
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hookagent.codec import encode_head, encode_msg
from hookagent.errors import (
    CorruptState,
    SessionStoreError,
    StoreConfigurationError,
    StoreUnavailable,
    VersionConflict,
)
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import AGENT_STATE_KEY, UNCONDITIONAL, ExpectedVersion, Fence, Versioned

from . import hops
from . import posixio as io
from .cache import Cached, HistoryCache, Seen, SlotKey, SlotLru
from .dircache import DirCache, walk
from .frames import encode_batches
from .guards import check_writable, decode_loaded
from .layout import HEAD, LOCK, id_parts, slot_parts
from .listing import SessionIndex
from .localcreate import LocalCreate, orphan_check
from .localread import Gone, Retry, usable
from .localtree import LOCK_FLAGS, RETRIES, where_of
from .localwrite import COMPACT_MIN, COMPACT_RATIO
from .mounts import LOCAL_TYPES, NETWORK_TYPES, fs_type
from .records import Head

T = TypeVar("T")
SEEN_SLOTS = 8192
"""Default of ``seen_slots``: slots whose last seen incarnation is remembered (forgetting one
only loses the check)."""


def recreated(ck: tuple[str, str, str], expected: int, current: int) -> VersionConflict:
    """The conflict for a slot deleted and re-created (to the same version) since this
    instance last saw it: the kernel's message alone ("expected 1, store has 1") reads as
    no conflict at all."""
    exc = VersionConflict(ck[0], ck[1], ck[2], expected, current)
    exc.args = (
        f"{exc.args[0]}: the slot was deleted and re-created since this store instance last "
        "saw it at that version (or another instance loaded the state being saved); reload "
        "it and retry",
    )
    return exc


class LocalCore(LocalCreate):
    """Blocking implementation; the async store runs each method in a worker thread, or on
    the loop's thread with its waits in workers (``hops``)."""

    def __init__(
        self,
        root: Path,
        *,
        sweep_after: float | None,
        cache_slots: int,
        writers: str,
        seen_slots: int = SEEN_SLOTS,
    ) -> None:
        self.root_path = root
        self.writers = writers
        self.sweep_after = sweep_after
        self.dur = io.Durability()
        self.cache = HistoryCache(cache_slots)
        self.index = SessionIndex()
        self.dirs = DirCache()
        """Open user, session and key directories, each checked by one ``lstat`` at use."""
        self._heads: dict[bytes, Head] = {}  # head file content -> decoded (immutable)
        self._root_fd: int | None = None
        self.local_disk = False
        """The root is open and on a local filesystem: saves may run inline (``hops``)."""
        self._open_lock = threading.Lock()
        self._busy = 0  # operations in flight (``call``)
        self._closing: list[int] = []  # root fds closed while operations were in flight
        self._swept: set[tuple[str, str, str]] = set()
        self.seen: SlotLru[Seen] = SlotLru(seen_slots)
        """Per slot, the version, history generation and commit end this instance last read
        or wrote: a save onto a re-created slot is a conflict, and a commit it saw that is
        gone (the same generation, cut back or damaged) fails closed."""

    # ------------------------------------------------------------------ root

    def root(self) -> int:
        self.dur.check()
        root = self._root_fd  # read once: a concurrent close() may reset it
        if root is not None:
            return root
        with self._open_lock:
            if self._root_fd is None:
                try:
                    io.make_root(self.root_path, self.dur)
                    fd = os.open(self.root_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError as exc:
                    raise io.mapped(exc, f"opening the store root {self.root_path}") from exc
                kind = fs_type(self.root_path)  # (one read of the mount table)
                if self.writers == "multi" and kind in NETWORK_TYPES:
                    os.close(fd)
                    raise StoreConfigurationError(
                        f"{self.root_path} is on a network filesystem "
                        f"({kind}), where flock is unreliable: "
                        "multi-writer mode is refused; pass writers='single' if exactly "
                        "one process writes this store"
                    )
                self.local_disk = kind in LOCAL_TYPES
                self._root_fd = fd
            return self._root_fd

    def call(self, func: Callable[..., T], *args: Any) -> T:
        """Run one operation; a ``close`` meanwhile defers closing the root fd it may use
        (a closed fd's number is soon reused, e.g. by another store's root)."""
        with self._open_lock:
            self._busy += 1
        try:
            return func(*args)
        finally:
            with self._open_lock:
                self._busy -= 1
                if not self._busy:
                    while self._closing:
                        os.close(self._closing.pop())

    def close(self) -> None:
        with self._open_lock:
            if self._root_fd is not None:
                if self._busy:
                    self._closing.append(self._root_fd)
                else:
                    os.close(self._root_fd)
                self._root_fd = None
                self.local_disk = False
        self.cache.clear()
        self.index.clear()
        self.dirs.clear()

    # ------------------------------------------------------------------ reads

    def get(self, user_id: str, session_id: str, key: str) -> Versioned:
        root = self.root()
        where = where_of(user_id, session_id, key)
        sparts, kparts = slot_parts(user_id, session_id), id_parts(key)
        gone_once = False
        try:
            for _ in range(RETRIES):
                sd = walk(self.dirs, root, (), sparts, create=False, dur=self.dur)
                if sd is None:
                    return Versioned(None, 0)
                try:
                    kd = walk(self.dirs, sd, tuple(sparts), kparts, create=False, dur=self.dur)
                    if kd is None:
                        return Versioned(None, 0)
                    try:
                        head = self._read_head(kd, where)
                        if head is None:
                            orphan_check(kd, where)
                            return Versioned(None, 0)
                        try:
                            got = self._read(sd, kd, (user_id, session_id, key), head, where)
                        except Retry:
                            continue
                        except Gone:
                            again = self._read_head(kd, where)
                            if again is not None and again.gen == head.gen:
                                # the held directory fd may be of a slot a delete moved
                                # aside: only a second walk from the root that finds the
                                # same head without its history is damage
                                if gone_once:
                                    raise CorruptState(
                                        f"{where}: the history file is missing"
                                    ) from None
                                gone_once = True
                            continue
                    finally:
                        self.dirs.release(kd)
                finally:
                    self.dirs.release(sd)
                self.seen.put((user_id, session_id, key), Seen(got.version, head.gen, got.size))
                assert got.log is not None  # (a decoded load's entry)
                state = decode_loaded(
                    got.state, got.log, (user_id, session_id, key), shared=got.count
                )
                return Versioned(state, got.version)
        except OSError as exc:
            raise io.mapped(exc, f"reading {where}") from exc
        raise StoreUnavailable(f"{where}: the slot kept being rewritten during the read")

    def _read(self, sd: int, kd: int, ck: SlotKey, head: Head, where: str) -> Cached:
        """An unlocked ``_load``. Inline (``hops``), one that must read and decode the whole
        record file runs in a worker; a warm one (a stat) or an absent slot stays here."""
        if hops.inline() and usable(self.cache.get(ck), head) is None:
            return hops.work_wait(
                functools.partial(self._load, locked=False), sd, kd, ck, head, where
            )
        return self._load(sd, kd, ck, head, where, locked=False)

    def exists(self, user_id: str, session_id: str, key: str) -> bool:
        root = self.root()
        where = where_of(user_id, session_id, key)
        try:
            parts = slot_parts(user_id, session_id) + id_parts(key)
            kd = walk(self.dirs, root, (), parts, create=False, dur=self.dur)
            if kd is None:
                return False
            try:
                st = os.stat(HEAD, dir_fd=kd, follow_symlinks=False)
            except FileNotFoundError:
                orphan_check(kd, where)
                return False
            finally:
                self.dirs.release(kd)
        except OSError as exc:
            raise io.mapped(exc, f"checking {where}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise CorruptState(f"{where}: head is not a regular file")
        return True

    # ------------------------------------------------------------------ save

    def save(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected: ExpectedVersion,
        key: str,
        fence: Fence | None,
    ) -> int:
        head_state = encode_head(state)  # validate before touching the disk
        history = state.context
        base = min(history.unchanged_prefix, len(history))
        tail = [encode_msg(m) for m in history[base:]]
        root = self.root()
        where = where_of(user_id, session_id, key)
        sparts = slot_parts(user_id, session_id)
        for _ in range(RETRIES):
            dirs: list[int] = []  # leased from ``self.dirs``
            lk = -1
            new_dirs: list[int] = []  # parents with a new entry, fsynced before the commit
            try:
                try:
                    pd = walk(
                        self.dirs, root, (), sparts[:-1], create=True, dur=self.dur,
                        pending=new_dirs,
                    )  # fmt: skip
                    assert pd is not None
                    dirs.append(pd)
                    sd = walk(
                        self.dirs, pd, tuple(sparts[:-1]), sparts[-1:], create=True,
                        dur=self.dur, pending=new_dirs,
                    )  # fmt: skip
                    assert sd is not None
                    dirs.append(sd)
                    lk = io.track(os.open(LOCK, LOCK_FLAGS, 0o600, dir_fd=sd))
                except FileNotFoundError:
                    continue  # a concurrent delete removed a directory on the way: walk again
                io.lock_exclusive(lk)
                if os.fstat(lk).st_nlink == 0:
                    continue  # the slot was deleted while we waited: its lock file is gone
                committed = False
                try:
                    version = self._save_locked(
                        sd, id_parts(key), history, base, tail, head_state, expected, fence,
                        where, (user_id, session_id, key), new_dirs,
                    )  # fmt: skip
                    committed = True
                finally:
                    if not committed:  # leave no empty slot behind a failed first save
                        try:
                            self._drop_if_empty(pd, sparts[-1], sd, keep_fence=True)
                        except (OSError, SessionStoreError):
                            pass  # best effort: the original error is the one to report
            except OSError as exc:
                raise io.mapped(exc, f"saving {where}") from exc
            finally:
                for fd in reversed(new_dirs):
                    os.close(fd)
                if lk >= 0:
                    io.close_fd(lk)
                for fd in reversed(dirs):
                    self.dirs.release(fd)
            history.mark_committed()
            return version
        raise StoreUnavailable(f"{where}: the slot kept being deleted during the save")

    def _save_locked(
        self,
        sd: int,
        kparts: list[str],
        history: Sequence[Msg],
        base: int,
        tail: list[bytes],
        head_state: bytes,
        expected: ExpectedVersion,
        fence: Fence | None,
        where: str,
        ck: tuple[str, str, str],
        new_dirs: list[int],
    ) -> int:
        newer = fence is not None and self._fence_check(sd, fence, where)
        sparts = slot_parts(ck[0], ck[1])
        kd = walk(self.dirs, sd, tuple(sparts), kparts, create=False, dur=self.dur)
        log_fd = -1
        log_st: os.stat_result | None = None
        try:
            if self.sweep_after is not None and ck not in self._swept:
                self._sweep_slot(sd, kd, ck, fresh=bool(new_dirs))
            head = None if kd is None else self._read_head(kd, where)
            if head is None and kd is not None:
                orphan_check(kd, where)  # never written over, never removed by a save
            tip = None
            if head is not None:
                assert kd is not None
                log_fd = self._open_log(kd, head.gen, where)
                log_st = os.fstat(log_fd)  # (under the lock: no other writer moves the size)
                tip = self._load(
                    sd, kd, ck, head, where, locked=True, decode=False, log_fd=log_fd,
                    log_st=log_st,
                )  # fmt: skip
            current = 0 if tip is None else tip.version
            if tip is not None:
                check_writable(tip.state, ck, where)  # (UNCONDITIONAL too)
            if expected is not UNCONDITIONAL and expected != current:
                raise VersionConflict(ck[0], ck[1], ck[2], expected, current)
            seen = self.seen.get(ck)
            if tip is not None and seen is not None and seen.version == current != 0:
                if expected is not UNCONDITIONAL and seen.gen != tip.gen:
                    # the slot was deleted and saved again up to the same version since this
                    # instance saw it: the caller's state belongs to the old incarnation
                    self.seen.drop(*ck)
                    self.cache.drop(*ck)
                    raise recreated(ck, expected, current)
            size: int | None = None  # the record file's, read under the lock
            # (format 1: past the head's length nothing was ever acknowledged)
            if tip is not None and head is not None and head.tail:
                assert kd is not None and log_st is not None
                size = self._keep_torn(
                    kd, log_fd, head.gen, tip.size, where, sparts + kparts, log_st.st_size
                )
            if newer:
                assert fence is not None
                self._fence_record(sd, fence)
            end = 0  # (a rewrite's head commits the whole new file)
            append = tip is not None and expected == current and 0 < base == tip.count
            payloads = tail if append else [encode_msg(m) for m in history[:base]] + tail
            if head is None:
                data = encode_batches(payloads)
                gen, size = self._create(
                    sd, sparts, kparts, kd, data, len(payloads), head_state, new_dirs
                )
                # the next load is warm: the caller's (frozen) messages, as an append keeps them
                self.cache.put(
                    ck, Cached(gen, len(payloads), size, (), 1, head_state, list(history))
                )
                if ck[2] == AGENT_STATE_KEY:  # a listing trusts this (``listing``)
                    self.index.created(ck[0], ck[1], os.fstat(sd))
            elif append and tip is not None:
                assert kd is not None
                self._sync_dirs(new_dirs)  # (none: a slot with a head has its directories)
                gen = head.gen
                if head.tail and tip.size - head.size < max(
                    COMPACT_MIN, (head.size - head.start) // COMPACT_RATIO
                ):
                    end = self._append(
                        kd, log_fd, tip, payloads, history[base:], head_state, where, ck, size
                    )
                elif head.tail:
                    gen = self._compact(
                        kd, log_fd, head, tip, payloads, history[base:], head_state, where, ck
                    )
                else:  # a format-1 head: this one append still replaces it (as format 2)
                    self._append_v1(kd, log_fd, head, payloads, head_state, where, ck)
            else:
                assert kd is not None
                data = encode_batches(payloads)
                gen = self._rewrite(kd, current + 1, data, len(payloads), head_state, new_dirs)
                self.cache.drop(*ck)
            self.seen.put(ck, Seen(current + 1, gen, end))
            return current + 1
        finally:
            if log_fd >= 0:
                os.close(log_fd)
            if kd is not None:
                self.dirs.release(kd)

    def _sweep_slot(
        self, sd: int, kd: int | None, ck: tuple[str, str, str], *, fresh: bool
    ) -> None:
        """Once per slot and store instance, under the lock: leftovers of killed writers.

        ``fresh``: this save created the slot directory, so it holds no leftovers.
        """
        assert self.sweep_after is not None
        now = time.time()
        if not fresh:
            self._sweep_one(sd, self.sweep_after, now)
        if kd is not None and not fresh:
            self._sweep_one(kd, self.sweep_after, now)
        if len(self._swept) > 65536:
            self._swept.clear()
        self._swept.add(ck)
