"""Loading a slot on local disk: the head, then only the record-file bytes not yet cached.

A format-2 head names the committed base; commit frames after it are newer commits, made by
one write + fsync under the slot's exclusive flock, then recorded in the ``.end`` hint. Bytes
up to the hint are acknowledged (fsynced, never cut back): read with no lock. Bytes beyond it
may be a writer's between its write and its fsync (or about to be truncated after a failed
fsync), so they are read only under the slot's flock taken *shared* without waiting, and
fsynced before they are returned (their writer may have died before its fsync). If a writer
holds the lock, the reader returns the state at the hint rather than wait: a stalled writer
must not hold up the process's few worker threads.
"""

from __future__ import annotations

import fcntl
import os
import stat
import struct
import zlib

from hookagent.errors import CorruptState

from . import posixio as io
from .cache import Cached, Seen, SlotKey
from .dircache import DirCache
from .frames import decode_messages
from .layout import HINT, LOCK, log_name
from .localtree import LocalTree
from .logscan import scan_base, scan_tail
from .records import Head

_HINT = struct.Struct(">64sQI")


def encode_hint(gen: str, end: int) -> bytes:
    """``.end``: the end of the last acknowledged commit of generation ``gen``."""
    body = struct.pack(">64sQ", gen.encode(), end)
    return body + struct.pack(">I", zlib.crc32(body))


HINT_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
"""``.end`` as the store keeps it open (non-blocking: a planted FIFO is refused, never
waited on)."""


def read_hint(kd: int, head: Head, where: str = "", dirs: DirCache | None = None) -> int:
    """The acknowledged end the ``.end`` hint records for ``head``'s generation, else 0.

    Written after an append's fsync, never fsynced itself: it can only be behind the file
    (stale or missing after a crash), never ahead, so the file ending before it means that
    acknowledged commits were cut off (fail closed) rather than a torn write. With ``dirs``
    (``kd`` leased from it) the file is kept open with the key directory: one ``pread`` per
    read. The store never unlinks a hint but with its key directory (whose replacement the
    cache notices); one unlinked by hand leaves this instance reading its own old copy, a
    hint that is at worst behind, as after a crash.
    """
    hint = -1 if dirs is None else dirs.hint(kd)
    if hint >= 0:
        data: bytes | None = os.pread(hint, _HINT.size + 1, 0)
    elif dirs is None:
        data = io.read_file(kd, HINT, where)
    else:
        data = _open_hint(kd, where, dirs)
    if data is None or len(data) != _HINT.size:
        return 0
    gen, end, crc = _HINT.unpack(data)
    if crc != zlib.crc32(data[:-4]) or gen.rstrip(b"\0") != head.gen.encode():
        return 0  # torn, or left by another generation
    return int(end)


def _open_hint(kd: int, where: str, dirs: DirCache) -> bytes | None:
    """Read ``.end`` through an fd then held with ``kd`` (read only if it cannot be written)."""
    try:
        fd = os.open(HINT, HINT_FLAGS, dir_fd=kd)
    except FileNotFoundError:
        return None
    except (PermissionError, IsADirectoryError):  # read only, or not a file (refused there)
        return io.read_file(kd, HINT, where)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            at = f"{where}: " if where else ""
            raise CorruptState(f"{at}{HINT!r} in the store tree is not a regular file")
        data = os.pread(fd, _HINT.size + 1, 0)
    except BaseException:
        os.close(fd)
        raise
    if not dirs.keep_hint(kd, fd):
        os.close(fd)
    return data


def _mine(seen: Seen | None, reached: int) -> str:
    """The note for a failure that only this instance's memory of the slot can tell."""
    if seen is None or reached >= seen.end:
        return ""
    return (
        f" (a commit this process saw acknowledged is missing: version {seen.version} "
        f"ended at byte {seen.end})"
    )


class Gone(Exception):
    """The record file named by a head vanished: a rewrite superseded it, read again."""


class Retry(Exception):
    """The slot changed (rewritten or deleted) while a reader waited for its lock."""


def usable(hit: Cached | None, head: Head) -> Cached | None:
    """A cache entry still describes a prefix of what ``head`` (and commits after it) hold."""
    if hit is None or hit.gen != head.gen:
        return None
    if hit.size <= head.size:  # a prefix of the committed base (format 1 appends extend it)
        same = hit.size == head.size
        ok = hit.count <= head.count and (hit.count == head.count) == same
        return hit if ok and (not same or hit.version == head.version) else None
    return hit if head.tail and hit.version > head.version else None


class LocalReads(LocalTree):
    """Base of ``LocalCore``: reading the newest committed state of a key directory."""

    dirs: DirCache

    def _share(self, sd: int, kd: int, head: Head, where: str) -> int:
        """The slot's lock file, flocked shared, once the head is still ``head``; -1 if a
        writer holds the lock (never waited for: a stalled writer must not hold up readers)."""
        try:
            lk = io.track(os.open(LOCK, io.READ_FLAGS, dir_fd=sd))
        except FileNotFoundError:
            raise Retry from None
        try:
            fcntl.flock(lk, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            io.close_fd(lk)
            return -1
        except BaseException:
            io.close_fd(lk)
            raise
        try:
            if os.fstat(lk).st_nlink == 0 or self._read_head(kd, where) != head:
                raise Retry
        except BaseException:
            io.close_fd(lk)
            raise
        return lk

    def _load(
        self, sd: int, kd: int, ck: SlotKey, head: Head, where: str, *, locked: bool,
        decode: bool = True, log_fd: int = -1, log_st: os.stat_result | None = None,
    ) -> Cached:  # fmt: skip
        """The newest committed state. ``locked``: the caller holds the exclusive flock.

        Bytes up to the ``.end`` hint (or already cached) are acknowledged commits, read with
        no lock. Bytes beyond them are read under the shared flock (fsynced first: their writer
        may have died before its fsync); if a writer holds the lock, the state at the hint is
        returned instead. With ``decode=False`` and nothing cached (a writer that only needs
        the version, count and append point) the messages are not decoded: ``msgs`` is empty
        and nothing is cached. ``log_fd``: the record file, opened by the caller (who closes it);
        ``log_st``: its ``fstat``, taken by a caller holding the lock (the size cannot move).
        """
        hit = usable(self.cache.get(ck), head)
        seen = self.seen.get(ck)
        if seen is not None and seen.gen != head.gen:
            seen = None  # another generation: what this instance saw proves nothing here
        acked = read_hint(kd, head, where, self.dirs) if head.tail else 0
        if seen is not None and seen.end > acked:
            acked = seen.end  # acknowledged too, though the hint may be stale or lost
        fd = log_fd
        if fd < 0 and hit is not None and hit.size >= head.size:  # the usual warm load
            try:
                st = os.stat(log_name(head.gen), dir_fd=kd, follow_symlinks=False)
            except FileNotFoundError:
                raise Gone from None
            if stat.S_ISREG(st.st_mode) and st.st_size == hit.size and acked <= hit.size:
                return hit  # nothing new (bytes past a format-1 head are never read)
        if fd < 0:
            try:
                fd = os.open(log_name(head.gen), io.READ_FLAGS, dir_fd=kd)
            except FileNotFoundError:
                raise Gone from None
        lock = -1
        try:
            known = max(head.size, acked, 0 if hit is None else hit.size)
            st = os.fstat(fd) if log_st is None or not locked else log_st
            if not stat.S_ISREG(st.st_mode):
                raise CorruptState(f"{where}: the history file is not a regular file")
            size = st.st_size  # (after the hint: the file is never behind it)
            if size < known:
                raise CorruptState(
                    f"{where}: the history file is shorter than its committed length"
                    + _mine(seen, size)
                )
            end = size if head.tail else head.size
            if end > known and not locked:
                lock = self._share(sd, kd, head, where)
                if lock < 0:
                    end = known  # a writer is in flight: the state it may not cut back
                else:
                    end = os.fstat(fd).st_size
                    acked = max(acked, read_hint(kd, head, where, self.dirs))
                    if end < max(known, acked):
                        raise CorruptState(
                            f"{where}: the history file is shorter than its committed length"
                            + _mine(seen, end)
                        )
                    if end > known:  # a writer may have died between its write and fsync
                        self.dur.fsync(fd, "the history records (read beyond the hint)")
            if hit is not None and end == hit.size:
                return hit
            start = head.start if hit is None else hit.size  # (format 3: after the head)
            data = io.pread_exact(fd, end - start, start)
        finally:
            if lock >= 0:
                io.close_fd(lock)  # releases the shared flock
            if log_fd < 0:
                os.close(fd)
        if len(data) != end - start:
            raise CorruptState(
                f"{where}: the history file is shorter than its committed length"
                + _mine(seen, start + len(data))
            )
        cut = max(head.size - start, 0)
        if hit is None or cut:  # (the rest of) the committed base first
            base = scan_base(data[:cut], head.count - (0 if hit is None else hit.count), where)
            version, count, state = head.version, head.count, head.state
        else:
            base = []
            version, count, state = hit.version, hit.count, hit.state
        tail = scan_tail(data[cut:], start + cut, version, count, state, where)
        if tail.end < acked:  # unparsable bytes before the acknowledged end: never a tear
            at = f" at byte {tail.torn}" if 0 <= tail.torn < acked else ""
            raise CorruptState(
                f"{where}: a commit acknowledged before (up to byte {acked}) is missing or "
                f"damaged{at}" + _mine(seen, tail.end)
            )
        if seen is not None and tail.version < seen.version:
            raise CorruptState(
                f"{where}: a commit this process saw acknowledged is missing: the history "
                f"reads as version {tail.version}, this store instance saw version "
                f"{seen.version} of the same generation"
            )
        state = tail.state
        if not decode and hit is None:
            return Cached(head.gen, tail.count, tail.end, (), tail.version, state)
        new = decode_messages(base + tail.payloads, where)
        if (0 if hit is None else hit.count) + len(new) != tail.count:
            got = (0 if hit is None else hit.count) + len(new)
            raise CorruptState(f"{where}: {got} messages where {tail.count} are committed")
        log = list(new) if hit is None else self.cache.extended(hit, new)
        entry = Cached(head.gen, tail.count, tail.end, (), tail.version, state, log)
        self.cache.put(ck, entry)
        return entry
