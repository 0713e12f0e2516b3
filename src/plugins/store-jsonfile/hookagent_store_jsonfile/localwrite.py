"""The local-disk store's writes below the lock: appends, compaction and rewrites.

An append writes one commit frame at the end of the last commit and fsyncs the record file
(the commit point), truncating it back on any failure. A rewrite (and a compaction, which is a
rewrite that copies the committed base as it is) writes a new generation file, fsyncs it, and
commits by renaming a new head over the old one. A format-1 slot's first append still replaces
its head, as format 2.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from hookagent.errors import CorruptState
from hookagent.messages import Msg

from . import posixio as io
from .cache import Cached
from .frames import encode_batches, encode_commit
from .layout import HEAD, HINT, TORN_PREFIX, is_log_name, log_name
from .localread import HINT_FLAGS, LocalReads, encode_hint
from .localtree import head_prefix
from .logscan import clean_tear, scan_tail
from .records import Head, decode_head_file, encode_head_file

COMPACT_MIN = 64 * 1024
"""Bytes of commit frames after a head below which an append never compacts."""
COMPACT_RATIO = 8
"""Compact once the commit frames after the base reach 1/COMPACT_RATIO of the base."""
log = logging.getLogger("hookagent_store_jsonfile")


class LocalWrites(LocalReads):
    """Base of ``LocalCore``: the write paths, called with the slot's flock held."""

    def _sync_dirs(self, new_dirs: list[int]) -> None:
        """Make new directory entries durable (before the commit point); closes the fds."""
        while new_dirs:
            self.dur.fsync(new_dirs[-1], "a directory (new entry)")
            os.close(new_dirs.pop())

    def _commit_head(self, kd: int, head: Head) -> None:
        """Replace ``head`` (the commit point), then fsync the directory."""
        io.replace_file(kd, HEAD, encode_head_file(head), self.dur, "the head")
        self.dur.fsync(kd, "the slot directory (head rename)")

    def _open_log(self, kd: int, gen: str, where: str) -> int:
        try:
            return os.open(log_name(gen), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=kd)
        except FileNotFoundError:
            raise CorruptState(f"{where}: the history file named by the head is missing") from None

    def _trim(self, fd: int, committed: int, where: str, size: int | None = None) -> None:
        """Drop an uncommitted tail (a killed writer's) before appending at ``committed``.
        ``size``: the file's size if the caller just read it (under the lock: unchanged)."""
        size = os.fstat(fd).st_size if size is None else size
        if size < committed:
            raise CorruptState(f"{where}: the history file is shorter than its committed length")
        if size > committed:
            os.ftruncate(fd, committed)

    root_path: Path

    def _keep_torn(
        self, kd: int, fd: int, gen: str, committed: int, where: str, parts: list[str],
        size: int,
    ) -> int:  # fmt: skip
        """Before a writer drops the bytes after the last commit (by a cut or a rewrite): if
        they are not a clean tear (``clean_tear``), copy them to ``.torn.<gen>.<offset>`` in
        the key's directory (O_EXCL, fsynced, then the directory) and log a warning. With a
        stale or lost ``.end`` hint, damage to the last acknowledged commit looks like an
        uncommitted tail; its bytes are then never destroyed silently. ``parts``: the key
        directory's path below the root (joined only for the warning: a path per save costs);
        ``size``: the file's, as the caller read it under the lock."""
        if size <= committed:
            return size
        data = io.pread_exact(fd, size - committed, committed)
        if clean_tear(data):
            return size
        name = f"{TORN_PREFIX}{gen}.{committed}"
        if self._torn_kept(kd, name, data):
            return size  # a failed rewrite's retry: these very bytes are kept already
        try:
            out = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=kd)
        except FileExistsError:  # other bytes kept at this offset before: keep these too
            name = f"{name}.{secrets.token_hex(4)}"
            out = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=kd)
        try:
            try:
                io.write_all(out, data)
                self.dur.fsync(out, "a copy of damaged uncommitted bytes")
            finally:
                os.close(out)
        except BaseException:
            io.unlink_quiet(kd, name)
            raise
        self.dur.fsync(kd, "the slot directory (copy of damaged bytes)")
        log.warning(
            "%s: %d bytes after the last commit (byte %d on) are damaged, not a torn write; "
            "they may be a commit that was acknowledged (the .end hint was stale or missing). "
            "Copied to %s before the writer drops them",
            where, len(data), committed, os.path.join(self.root_path, *parts, name),
        )  # fmt: skip
        return size

    def _torn_kept(self, kd: int, name: str, data: bytes) -> bool:
        """Whether a copy named ``name`` or ``name.<suffix>`` already holds exactly ``data``
        (then made durable again: the attempt that wrote it may have died before its fsync)."""
        for entry in os.listdir(kd):
            if entry != name and not entry.startswith(name + "."):
                continue
            try:
                if io.read_file(kd, entry) != data:
                    continue
                fd = os.open(entry, io.READ_FLAGS, dir_fd=kd)
            except (OSError, CorruptState):
                continue  # unreadable, vanished or not a regular file: not our copy
            try:
                self.dur.fsync(fd, "a copy of damaged uncommitted bytes")
            finally:
                os.close(fd)
            self.dur.fsync(kd, "the slot directory (copy of damaged bytes)")
            return True
        return False

    def _write_hint(self, kd: int, gen: str, end: int) -> None:
        """Record the acknowledged end (best effort, no fsync: the commit is already durable),
        through the fd held with the key directory (``read_hint``) once there is one."""
        data = encode_hint(gen, end)
        try:
            hint = self.dirs.hint(kd)
            if hint >= 0:
                os.pwrite(hint, data, 0)
                return
            fd = os.open(HINT, HINT_FLAGS | os.O_CREAT, 0o600, dir_fd=kd)
            try:
                os.pwrite(fd, data, 0)  # (a planted FIFO: ESPIPE, never waited on)
            except BaseException:
                os.close(fd)
                raise
            if not self.dirs.keep_hint(kd, fd):
                os.close(fd)
        except OSError:
            pass

    def _append(
        self, kd: int, fd: int, tip: Cached, payloads: list[bytes], new: Sequence[Msg], head_state: bytes,
        where: str, ck: tuple[str, str, str], size: int | None = None,
    ) -> int:  # fmt: skip
        """One write of the commit frame(s) and one fsync: the fsync is the commit point.
        Returns where the new commit ends. ``size``: the file's size as the caller read it
        under the lock.

        The cache then takes the caller's (frozen) messages as they are, like the in-memory
        reference store keeps them: no decode of what was just encoded.
        """
        version, count = tip.version + 1, tip.count + len(payloads)
        data = encode_commit(payloads, head_state, version, count, tip.state)
        self._trim(fd, tip.size, where, size)
        try:
            io.write_all(fd, data, tip.size)
            self.dur.fsync(fd, "the history records")
        except BaseException as exc:
            try:
                os.ftruncate(fd, tip.size)  # leave the old state byte-identical
            except OSError as cut:
                exc.add_note(
                    f"{where}: the uncommitted commit frame could not be truncated away ({cut}); "
                    "if it was written whole, other processes will read it as committed"
                )
            raise
        self._write_hint(kd, tip.gen, tip.size + len(data))
        hit = self.cache.get(ck)
        if hit is not None and (hit.gen, hit.size, hit.version) == (tip.gen, tip.size, tip.version):
            log = self.cache.extended(hit, new)  # O(new): the shared list, appended
            self.cache.put(
                ck, Cached(tip.gen, count, tip.size + len(data), (), version, head_state, log)
            )
        return tip.size + len(data)

    def _append_v1(
        self, kd: int, fd: int, head: Head, payloads: list[bytes], head_state: bytes, where: str,
        ck: tuple[str, str, str],
    ) -> None:  # fmt: skip
        """Append to a format-1 slot: batch frames into the base, then a format-2 head."""
        data = encode_batches(payloads)
        new = Head(
            head.version + 1, head.gen, head.count + len(payloads), head.size + len(data),
            head_state, tail=True,
        )  # fmt: skip
        self._trim(fd, head.size, where)
        renamed = False
        try:
            if data:
                io.write_all(fd, data, head.size)
                self.dur.fsync(fd, "the history records")
            self._commit_head(kd, new)
            renamed = True
        except BaseException:
            if not renamed and self._head_is(kd, head):
                try:
                    os.ftruncate(fd, head.size)  # leave the old state byte-identical
                except OSError:
                    pass
            raise
        self.cache.drop(*ck)

    def _head_is(self, kd: int, head: Head) -> bool:
        """True if the committed head is still ``head`` (so truncating back is safe)."""
        try:
            fd = os.open(HEAD, io.READ_FLAGS, dir_fd=kd)
        except OSError:
            return False
        try:
            data = head_prefix(fd, os.fstat(fd).st_size)
            return decode_head_file(data, "head") == head
        except (OSError, CorruptState):
            return False
        finally:
            os.close(fd)

    def _rewrite(
        self, kd: int, version: int, data: bytes, count: int, head_state: bytes,
        new_dirs: list[int], *, superseded: bool = True,
    ) -> str:  # fmt: skip
        """A new generation holding ``data`` (``count`` messages), committed by a new head.

        ``superseded``: a head existed, so an older generation file is to be removed (a first
        save skips that listing; a killed first save's leftovers are swept by age).
        """
        gen = secrets.token_hex(8)
        name = log_name(gen)
        renamed = False
        fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=kd)
        try:
            try:
                io.write_all(fd, data)
                self.dur.fsync(fd, "the history file")
            finally:
                os.close(fd)
            self._sync_dirs(new_dirs)  # after the data: one journal commit covers both
            new = Head(version, gen, count, len(data), head_state, tail=True)
            io.replace_file(kd, HEAD, encode_head_file(new), self.dur, "the head")
            renamed = True
            self.dirs.drop_head(kd)  # the head held open was the one just replaced
            self.dur.fsync(kd, "the slot directory (head rename)")
        except BaseException:
            if not renamed:
                io.unlink_quiet(kd, name)
            raise
        for entry in os.listdir(kd) if superseded else ():  # the older generation, leftovers
            if is_log_name(entry) and entry != name:
                io.unlink_quiet(kd, entry)
        return gen

    def _compact(
        self, kd: int, fd: int, head: Head, tip: Cached, payloads: list[bytes],
        new: Sequence[Msg], head_state: bytes, where: str, ck: tuple[str, str, str],
    ) -> str:  # fmt: skip
        """An append that rewrites (returns the new generation): the committed base as it is, then every later message in
        big batch frames (a cold load inflates few frames instead of one per save).

        Done when the commit frames after the base outweigh ``1/COMPACT_RATIO`` of it, so each
        byte is copied a bounded number of times on average; crash-safe like any rewrite.
        """
        data = io.pread_exact(fd, tip.size, 0)
        if len(data) != tip.size:
            raise CorruptState(f"{where}: the history file is shorter than its committed length")
        tail = scan_tail(data[head.size :], head.size, head.version, head.count, head.state, where)
        if (tail.end, tail.count, tail.version) != (tip.size, tip.count, tip.version):
            raise CorruptState(f"{where}: the history file changed under the slot's lock")
        body = data[head.start : head.size] + encode_batches(tail.payloads + payloads)
        version, count = tip.version + 1, tip.count + len(payloads)
        gen = self._rewrite(kd, version, body, count, head_state, [])
        hit = self.cache.get(ck)
        if hit is not None and (hit.gen, hit.size, hit.version) == (tip.gen, tip.size, tip.version):
            log = self.cache.extended(hit, new)
            self.cache.put(ck, Cached(gen, count, len(body), (), version, head_state, log))
        else:
            self.cache.drop(*ck)
        return gen
