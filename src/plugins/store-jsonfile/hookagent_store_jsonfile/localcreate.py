"""A key's first save, the fence record and the head-less key check (local disk, under the lock).

A first save builds the whole key directory (record file and head) under a private temp name
beside it and renames it into place: that rename is the commit point. So a first save killed
half-way leaves only a ``.tmp.*`` directory (swept by age), never a record file without a head,
and a record file without a head always means a head that was lost: ``CorruptState``, kept as
evidence until an operator deletes the slot (deletes rename the key directory away first, for
the same reason).
"""

from __future__ import annotations

import errno
import os
import secrets

from hookagent.errors import CorruptState
from hookagent.store.base import Fence

from . import posixio as io
from .dircache import DirCache, walk
from .guards import fence_is_newer
from .layout import FENCE, HEAD, TORN_PREFIX, is_log_name, log_name
from .localwrite import LocalWrites
from .records import Head, decode_fence, encode_fence, encode_first_file, encode_head_file

_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS}
"""``link`` refused by the filesystem: the first save falls back to two files."""


def orphan_check(kd: int, where: str) -> None:
    """A key directory with no head: ``CorruptState`` if history files remain in it."""
    names = io.listdir_own(kd)  # (unlocked in loads: ``kd`` may be shared with another thread)
    left = sorted(n for n in names if is_log_name(n) or n.startswith(TORN_PREFIX))
    if left:
        raise CorruptState(
            f"{where}: the head is missing but the history remains ({', '.join(left)}): a "
            "lost head (or a first save killed under an older hookagent). Nothing is read, "
            "written or removed; inspect the files, then delete the slot to repair it"
        )


class LocalCreate(LocalWrites):
    """Base of ``LocalCore``: first saves, fences and the ancestors a first save syncs."""

    dirs: DirCache

    def _fence_check(self, sd: int, fence: Fence, where: str) -> bool:
        """The one fence rule against the session's ``.fence``; True if ``fence`` is newer
        (recorded by ``_fence_record`` once the save's own checks passed)."""
        data = io.read_file(sd, FENCE, where)
        return fence_is_newer(fence, None if data is None else decode_fence(data, where), where)

    def _fence_record(self, sd: int, fence: Fence) -> None:
        io.replace_file(sd, FENCE, encode_fence(fence.epoch, fence.owner), self.dur, "the fence")
        self.dur.fsync(sd, "the session directory (fence rename)")

    def _pend_ancestors(
        self, full: list[str], new_dirs: list[int], held: list[tuple[tuple[str, ...], int]]
    ) -> None:
        """A first save fsyncs (before its commit) every directory from the root down to the
        parent of ``full`` (the key's parent): one left by a failed or killed earlier save may
        have no durable entry. Skipped for an entry this store instance knows durable (see
        ``dircache``): the root's fsync for a user seen before. ``held`` gets each level's
        path and fd (the caller marks them durable once the save committed, then releases
        them)."""
        seen = set()
        for fd in new_dirs:
            st = os.fstat(fd)
            seen.add((st.st_dev, st.st_ino))
        fd = self.root()
        for i in range(len(full)):
            child = tuple(full[: i + 1])
            nxt = walk(self.dirs, fd, child[:-1], [full[i]], create=False, dur=self.dur)
            if nxt is None:
                raise FileNotFoundError(f"{'/'.join(child)} vanished during a first save")
            held.append((child, nxt))
            if not self.dirs.durable(child, nxt):
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    new_dirs.append(os.dup(fd))
            fd = nxt

    def _write_key(
        self, td: int, gen: str, count: int, data: bytes, head_state: bytes, files: list[int]
    ) -> int:
        """A new key's files in its temp directory ``td``: one record file starting with its
        format-3 head, linked as ``head`` too (one inode). Where hard links are refused (some
        FUSE or network filesystems), the format-2 pair: record file and head. Each file is
        written, not fsynced: its fd is added to ``files`` (the caller's to fsync before the
        commit point, with the directories, then to close). Returns the record file's
        committed size (the head's ``size``)."""
        name = log_name(gen)
        first = encode_first_file(1, gen, count, data, head_state)
        fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=td)
        files.append(fd)
        io.write_all(fd, first)
        try:
            os.link(name, HEAD, src_dir_fd=td, dst_dir_fd=td, follow_symlinks=False)
            return len(first)
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
        os.close(files.pop())
        os.unlink(name, dir_fd=td)  # (the temp directory is private: nobody read it)
        head = Head(1, gen, count, len(data), head_state, tail=True)
        for name, body in ((log_name(gen), data), (HEAD, encode_head_file(head))):
            fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=td)
            files.append(fd)
            io.write_all(fd, body)
        return len(data)

    def _create(
        self, sd: int, sparts: list[str], kparts: list[str], kd: int | None, data: bytes,
        count: int, head_state: bytes, new_dirs: list[int],
    ) -> tuple[str, int]:  # fmt: skip
        """Version 1 of a key: its directory built as ``.tmp.*``, then renamed into place
        (over the empty key directory a failed save may have left). Returns the generation
        and the record file's committed size."""
        kpd = io.walk(sd, kparts[:-1], create=True, dur=self.dur, pending=new_dirs)
        assert kpd is not None
        held: list[tuple[tuple[str, ...], int]] = []
        try:
            # every directory above the key's parent: that one is fsynced after the rename
            self._pend_ancestors(sparts + kparts[:-1], new_dirs, held)
            if kd is not None:
                self._clear_dir(kd)  # (orphan_check passed: a stale hint or temp file at most)
            gen = secrets.token_hex(8)
            tmp = io.tmp_name()
            os.mkdir(tmp, 0o700, dir_fd=kpd)
            renamed = False
            try:
                td = os.open(tmp, io.DIR_FLAGS, dir_fd=kpd)
                files: list[int] = []
                try:
                    size = self._write_key(td, gen, count, data, head_state, files)
                    # every fsync the commit point needs, in one wait (one thread hop inline)
                    self.dur.fsync_all(
                        [(fd, "the new key's files") for fd in files]
                        + [(td, "the new key's directory")]
                        + [(fd, "a directory (new entry)") for fd in new_dirs]
                    )
                finally:
                    for fd in files:
                        os.close(fd)
                    os.close(td)
                os.rename(tmp, kparts[-1], src_dir_fd=kpd, dst_dir_fd=kpd)  # the commit point
                renamed = True
                self.dur.fsync(kpd, "the key's parent directory (first save)")
            except BaseException:
                if not renamed:
                    io.rmtree_at(kpd, tmp)
                raise
            for path, fd in held:  # every directory on the path has a durable entry now
                self.dirs.mark_durable(path, fd)
            return gen, size
        finally:
            for _, fd in reversed(held):
                self.dirs.release(fd)
            os.close(kpd)
