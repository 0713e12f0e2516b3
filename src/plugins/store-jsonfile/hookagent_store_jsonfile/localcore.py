"""The local-disk store's synchronous core: the save protocol, loads, deletes and listing.

Save (under the slot's flock): read the head; check fence and version; then either

* append: write the new records at the committed byte offset of the current generation's
  record file (dropping any uncommitted tail a crashed writer left), fsync it; or
* rewrite: write every record to a fresh ``h<new gen>.log`` (O_EXCL), fsync it;

then write the new head to a temp file, fsync, ``os.replace`` it over ``head`` (the commit
point) and fsync the directory. A crash before the rename leaves the old head, which only
covers bytes that were already committed. Reads take no lock: they read the head, then only
the committed bytes of the record file that the head names.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import orjson
from hookagent.codec import (
    MAX_DEPTH,
    MAX_MESSAGE_BYTES,
    check_depth,
    decode_head,
    encode_head,
    encode_msg,
    structure,
)
from hookagent.errors import (
    CorruptState,
    Fenced,
    InvalidState,
    StoreConfigurationError,
    StoreUnavailable,
    UnsupportedSchemaVersion,
    VersionConflict,
)
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import UNCONDITIONAL, ExpectedVersion, Fence, Versioned

from . import posixio as io
from .cache import Cached, HistoryCache
from .layout import (
    FENCE,
    HEAD,
    LOCK,
    MORE,
    id_parts,
    is_log_name,
    is_private,
    log_name,
    parts_to_id,
    slot_parts,
)
from .mounts import fs_type, is_network
from .records import (
    Head,
    decode_fence,
    decode_head_file,
    encode_fence,
    encode_head_file,
    frame,
    unframe,
)

_RETRIES = 20
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class _Gone(Exception):
    """The record file named by a head vanished: a rewrite superseded it, read again."""


def _where(user_id: str, session_id: str, key: str) -> str:
    return f"user_id={user_id!r} session_id={session_id!r} key={key!r}"


def decode_payloads(payloads: Sequence[bytes], where: str) -> list[Msg]:
    """Decode stored messages with the codec's rules (size, depth 64, strict structure).

    The exact depth walk only runs when a payload holds more than ``MAX_DEPTH`` opening
    brackets: fewer brackets cannot nest deeper, and the walk is most of the decode time.
    """
    out: list[Msg] = []
    try:
        for p in payloads:
            if len(p) > MAX_MESSAGE_BYTES:
                raise CorruptState(f"{where}: a stored message is {len(p)} bytes, over the limit")
            try:
                doc = orjson.loads(p)
            except orjson.JSONDecodeError as exc:
                raise CorruptState(f"{where}: a stored message is not JSON: {exc}") from None
            if p.count(b"[") + p.count(b"{") > MAX_DEPTH:
                check_depth(doc, where="message")
            out.append(structure(doc, Msg, where="message"))
    except UnsupportedSchemaVersion:
        raise
    except InvalidState as exc:
        if isinstance(exc, CorruptState):
            raise
        raise CorruptState(f"{where}: stored message does not decode: {exc}") from exc
    return out


class LocalCore:
    """Blocking implementation; the async store runs each method in a worker thread."""

    def __init__(
        self, root: Path, *, sweep_after: float | None, cache_slots: int, writers: str
    ) -> None:
        self.root_path = root
        self.writers = writers
        self.sweep_after = sweep_after
        self.dur = io.Durability()
        self.cache = HistoryCache(cache_slots)
        self._root_fd: int | None = None
        self._open_lock = threading.Lock()

    # ------------------------------------------------------------------ root

    def root(self) -> int:
        self.dur.check()
        if self._root_fd is None:
            with self._open_lock:
                if self._root_fd is None:
                    try:
                        self.root_path.mkdir(mode=0o700, parents=True, exist_ok=True)
                        fd = os.open(self.root_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    except OSError as exc:
                        raise io.mapped(exc, f"opening the store root {self.root_path}") from exc
                    if self.writers == "multi" and is_network(self.root_path):
                        os.close(fd)
                        raise StoreConfigurationError(
                            f"{self.root_path} is on a network filesystem "
                            f"({fs_type(self.root_path)}), where flock is unreliable: "
                            "multi-writer mode is refused; pass writers='single' if exactly "
                            "one process writes this store"
                        )
                    if self.sweep_after is not None:
                        self._sweep(fd, self.sweep_after)
                    self._root_fd = fd
        return self._root_fd

    def close(self) -> None:
        with self._open_lock:
            if self._root_fd is not None:
                os.close(self._root_fd)
                self._root_fd = None
        self.cache.clear()

    # ------------------------------------------------------------------ reads

    def _read_head(self, kd: int, where: str) -> Head | None:
        data = io.read_file(kd, HEAD)
        return None if data is None else decode_head_file(data, where)

    def _history(self, kd: int, ck: tuple[str, str, str], head: Head, where: str) -> list[Msg]:
        hit = self.cache.get(ck)
        base: tuple[Msg, ...] = ()
        start = 0
        if (
            hit is not None
            and hit.gen == head.gen
            and hit.count <= head.count
            and hit.size <= head.size
            and (hit.count == head.count) == (hit.size == head.size)
        ):
            base, start = hit.msgs, hit.size
        if start < head.size:
            try:
                fd = os.open(log_name(head.gen), io.READ_FLAGS, dir_fd=kd)
            except FileNotFoundError:
                raise _Gone from None
            try:
                data = io.pread_exact(fd, head.size - start, start)
            finally:
                os.close(fd)
            if len(data) != head.size - start:
                raise CorruptState(
                    f"{where}: the history file is shorter than its committed length"
                )
            new = decode_payloads(unframe(data, head.count - len(base), where), where)
            base = base + tuple(new)
            self.cache.put(ck, Cached(head.gen, head.count, head.size, base))
        elif head.count != len(base):
            raise CorruptState(f"{where}: head commits {head.count} messages in {head.size} bytes")
        return list(base)

    def get(self, user_id: str, session_id: str, key: str) -> Versioned:
        root = self.root()
        where = _where(user_id, session_id, key)
        parts = slot_parts(user_id, session_id) + id_parts(key)
        try:
            for _ in range(_RETRIES):
                kd = io.walk(root, parts, create=False, dur=self.dur)
                if kd is None:
                    return Versioned(None, 0)
                try:
                    head = self._read_head(kd, where)
                    if head is None:
                        return Versioned(None, 0)
                    try:
                        msgs = self._history(kd, (user_id, session_id, key), head, where)
                    except _Gone:
                        again = self._read_head(kd, where)
                        if again is not None and again.gen == head.gen:
                            raise CorruptState(f"{where}: the history file is missing") from None
                        continue
                finally:
                    os.close(kd)
                return Versioned(decode_head(head.state, msgs), head.version)
        except OSError as exc:
            raise io.mapped(exc, f"reading {where}") from exc
        raise StoreUnavailable(f"{where}: the slot kept being rewritten during the read")

    def exists(self, user_id: str, session_id: str, key: str) -> bool:
        root = self.root()
        try:
            kd = io.walk(
                root, slot_parts(user_id, session_id) + id_parts(key), create=False, dur=self.dur
            )
            if kd is None:
                return False
            try:
                st = os.stat(HEAD, dir_fd=kd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            finally:
                os.close(kd)
        except OSError as exc:
            raise io.mapped(exc, f"checking {_where(user_id, session_id, key)}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise CorruptState(f"{_where(user_id, session_id, key)}: head is not a regular file")
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
        where = _where(user_id, session_id, key)
        sparts = slot_parts(user_id, session_id)
        for _ in range(_RETRIES):
            fds: list[int] = []
            try:
                try:
                    pd = io.walk(root, sparts[:-1], create=True, dur=self.dur)
                    assert pd is not None
                    fds.append(pd)
                    sd = io.open_dir(pd, sparts[-1], create=True, dur=self.dur)
                    assert sd is not None
                    fds.append(sd)
                    lk = os.open(LOCK, _LOCK_FLAGS, 0o600, dir_fd=sd)
                    fds.append(lk)
                except FileNotFoundError:
                    continue  # a concurrent delete removed a directory on the way: walk again
                fcntl.flock(lk, fcntl.LOCK_EX)
                if os.fstat(lk).st_nlink == 0:
                    continue  # the slot was deleted while we waited: its lock file is gone
                committed = False
                try:
                    version = self._save_locked(
                        sd, id_parts(key), history, base, tail, head_state, expected, fence,
                        where, (user_id, session_id, key),
                    )  # fmt: skip
                    committed = True
                finally:
                    if not committed:
                        self._drop_if_empty(pd, sparts[-1], sd, keep_fence=True)
            except OSError as exc:
                raise io.mapped(exc, f"saving {where}") from exc
            finally:
                for fd in reversed(fds):
                    os.close(fd)
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
    ) -> int:
        if fence is not None:
            self._check_fence(sd, fence, where)
        kd = io.walk(sd, kparts, create=False, dur=self.dur)
        try:
            head = None if kd is None else self._read_head(kd, where)
            current = 0 if head is None else head.version
            if expected is not UNCONDITIONAL and expected != current:
                raise VersionConflict(ck[0], ck[1], ck[2], expected, current)
            append = head is not None and expected == current and 0 < base == head.count
            payloads = tail if append else [encode_msg(m) for m in history[:base]] + tail
            if kd is None:
                kd = io.walk(sd, kparts, create=True, dur=self.dur)
                assert kd is not None
            if append:
                assert head is not None
                self._append(kd, head, payloads, head_state, where, ck)
            else:
                try:
                    self._rewrite(kd, current + 1, payloads, head_state)
                except BaseException:
                    if head is None:  # nothing was ever committed here: leave no trace
                        self._clear_dir(kd)
                    raise
                self.cache.drop(*ck)
            return current + 1
        finally:
            if kd is not None:
                os.close(kd)

    def _commit_head(self, kd: int, head: Head) -> None:
        """Temp file, fsync, rename over ``head`` (commit point), fsync the directory."""
        tmp = io.tmp_name()
        fd = os.open(tmp, io.NEW_FLAGS, 0o600, dir_fd=kd)
        try:
            try:
                io.write_all(fd, encode_head_file(head))
                self.dur.fsync(fd, "the head (temp file)")
            finally:
                os.close(fd)
            os.replace(tmp, HEAD, src_dir_fd=kd, dst_dir_fd=kd)
        except BaseException:
            io.unlink_quiet(kd, tmp)
            raise
        self.dur.fsync(kd, "the slot directory (head rename)")

    def _append(
        self,
        kd: int,
        head: Head,
        payloads: list[bytes],
        head_state: bytes,
        where: str,
        ck: tuple[str, str, str],
    ) -> None:
        try:
            fd = os.open(log_name(head.gen), os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=kd)
        except FileNotFoundError:
            raise CorruptState(f"{where}: the history file named by the head is missing") from None
        data = frame(payloads)
        new = Head(
            head.version + 1,
            head.gen,
            head.count + len(payloads),
            head.size + len(data),
            head_state,
        )
        renamed = False
        try:
            size = os.fstat(fd).st_size
            if size < head.size:
                raise CorruptState(
                    f"{where}: the history file is shorter than its committed length"
                )
            if size > head.size:
                os.ftruncate(fd, head.size)  # an uncommitted tail left by a crashed writer
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
        finally:
            os.close(fd)
        hit = self.cache.get(ck)
        if hit is not None and (hit.gen, hit.count, hit.size) == (head.gen, head.count, head.size):
            msgs = hit.msgs + tuple(decode_payloads(payloads, where))
            self.cache.put(ck, Cached(new.gen, new.count, new.size, msgs))

    def _head_is(self, kd: int, head: Head) -> bool:
        """True if the committed head is still ``head`` (so truncating back is safe)."""
        try:
            data = io.read_file(kd, HEAD)
            return data is not None and decode_head_file(data, "head") == head
        except (OSError, CorruptState):
            return False

    def _rewrite(self, kd: int, version: int, payloads: list[bytes], head_state: bytes) -> None:
        gen = secrets.token_hex(8)
        name = log_name(gen)
        data = frame(payloads)
        renamed = False
        fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=kd)
        try:
            try:
                io.write_all(fd, data)
                self.dur.fsync(fd, "the history file")
            finally:
                os.close(fd)
            tmp = io.tmp_name()
            hfd = os.open(tmp, io.NEW_FLAGS, 0o600, dir_fd=kd)
            try:
                try:
                    io.write_all(
                        hfd,
                        encode_head_file(Head(version, gen, len(payloads), len(data), head_state)),
                    )
                    self.dur.fsync(hfd, "the head (temp file)")
                finally:
                    os.close(hfd)
                os.replace(tmp, HEAD, src_dir_fd=kd, dst_dir_fd=kd)
                renamed = True
            finally:
                if not renamed:
                    io.unlink_quiet(kd, tmp)
            self.dur.fsync(kd, "the slot directory (head rename)")
        except BaseException:
            if not renamed:
                io.unlink_quiet(kd, name)
            raise
        for entry in os.listdir(kd):  # the superseded generation and any crash leftovers
            if is_log_name(entry) and entry != name:
                io.unlink_quiet(kd, entry)

    def _check_fence(self, sd: int, fence: Fence, where: str) -> None:
        data = io.read_file(sd, FENCE)
        newest = 0 if data is None else decode_fence(data, where)
        if fence.epoch < newest:
            raise Fenced(
                f"lease epoch {fence.epoch} of {fence.owner!r} is older than {newest} on {where}"
            )
        if fence.epoch > newest:
            tmp = io.tmp_name()
            fd = os.open(tmp, io.NEW_FLAGS, 0o600, dir_fd=sd)
            try:
                try:
                    io.write_all(fd, encode_fence(fence.epoch, fence.owner))
                    self.dur.fsync(fd, "the fence (temp file)")
                finally:
                    os.close(fd)
                os.replace(tmp, FENCE, src_dir_fd=sd, dst_dir_fd=sd)
            except BaseException:
                io.unlink_quiet(sd, tmp)
                raise
            self.dur.fsync(sd, "the session directory (fence rename)")

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

    def _drop_if_empty(self, pd: int, name: str, sd: int, *, keep_fence: bool) -> bool:
        """Remove a session directory that holds no committed key (caller holds its lock)."""
        if self._has_key(sd) or (keep_fence and io.read_file(sd, FENCE) is not None):
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
        root = self.root()
        where = _where(user_id, session_id, key or "*")
        sparts = slot_parts(user_id, session_id)
        try:
            for _ in range(_RETRIES):
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
                        lk = os.open(LOCK, _LOCK_FLAGS, 0o600, dir_fd=sd)
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
                    self._drop_if_empty(pd, sparts[-1], sd, keep_fence=key is not None)
                    return existed
                finally:
                    for fd in reversed(fds):
                        os.close(fd)
        except OSError as exc:
            raise io.mapped(exc, f"deleting {where}") from exc
        raise StoreUnavailable(f"{where}: the slot kept changing during the delete")

    def _delete_key(self, sd: int, parts: list[str]) -> bool:
        """Unlink the head first (durably: the key is gone from then on), then the rest."""
        kpd = io.walk(sd, parts[:-1], create=False, dur=self.dur)
        if kpd is None:
            return False
        try:
            kd = io.open_dir(kpd, parts[-1], create=False, dur=self.dur)
            if kd is None:
                return False
            try:
                try:
                    os.unlink(HEAD, dir_fd=kd)
                    existed = True
                    self.dur.fsync(kd, "the slot directory (delete)")
                except FileNotFoundError:
                    existed = False
            finally:
                os.close(kd)
            io.rmtree_at(kpd, parts[-1])
            return existed
        finally:
            os.close(kpd)

    # ------------------------------------------------------------------ listing and sweeping

    def list_sessions(self, user_id: str) -> list[tuple[str, list[str]]]:
        """Every session id of a user with its path parts, sorted; no payload is read."""
        root = self.root()
        try:
            ud = io.walk(root, id_parts(user_id), create=False, dur=self.dur)
            if ud is None:
                return []
            try:
                found = [(parts_to_id(p), p) for p in self._key_leaves(ud, [])]
            finally:
                os.close(ud)
        except OSError as exc:
            raise io.mapped(exc, f"listing the sessions of user_id={user_id!r}") from exc
        return sorted((sid, p) for sid, p in found if sid is not None)

    def session_has_state(self, user_id: str, parts: list[str]) -> bool:
        try:
            sd = io.walk(self.root(), id_parts(user_id) + parts, create=False, dur=self.dur)
            if sd is None:
                return False
            try:
                return self._has_key(sd)
            finally:
                os.close(sd)
        except OSError as exc:
            raise io.mapped(exc, f"listing the sessions of user_id={user_id!r}") from exc

    def sweep(self, older_than: float) -> int:
        try:
            return self._sweep(self.root(), older_than)
        except OSError as exc:
            raise io.mapped(exc, "sweeping temp files") from exc

    def _sweep(self, fd: int, older_than: float) -> int:
        """Remove temp files and superseded record files older than ``older_than`` seconds."""
        now = time.time()
        removed = io.sweep_dir(fd, older_than, now)
        names = os.listdir(fd)
        if HEAD in names:
            try:
                current = self._read_head(fd, "sweep")
            except CorruptState:
                current = None  # never remove anything next to a head we cannot read
            if current is not None:
                for name in names:
                    if is_log_name(name) and name != log_name(current.gen):
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if now - st.st_mtime >= older_than:
                            io.unlink_quiet(fd, name)
                            removed += 1
        for name in names:
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
