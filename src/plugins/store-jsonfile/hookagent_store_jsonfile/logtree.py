"""The local session log's directory tree: open sessions (cached fds), the lock, delete, list.

Each session is a directory ``<root>/.sessionlog/<user>/<session>/`` whose ``head`` file is
also its lock: a writer holds ``flock(LOCK_EX)`` on it from reading the head to writing the
new one (read-decide-write is one step across processes), readers ``LOCK_SH``. The head file
is never replaced (it is written in place, see ``loglocal``), so the lock's inode lives as
long as the session; a delete unlinks it while holding the lock, and a waiter that then gets
the lock sees ``st_nlink == 0`` and opens the session again.

The session directory's fd and the head's fd are cached per instance (``cache_slots``
sessions, least recently used out), so a warm call opens nothing. flock belongs to the open
file, which threads of this process share: a per-session ``threading.Lock`` serialises them.
After a fork the child drops (closes, never unlocks) what it inherited.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hookagent.errors import StoreConfigurationError, StoreUnavailable

from . import posixio as io
from .layout import MORE, id_parts, is_private, parts_to_id
from .logfiles import LOG_DIR
from .mounts import fs_type, is_network

T = TypeVar("T")
HEAD = "head"
RETRIES = 20
HEAD_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC


class Session:
    """One open session: its directory and head fds, pinned while an operation uses them."""

    def __init__(self, sd: int, hd: int) -> None:
        self.sd, self.hd = sd, hd
        self.mutex = threading.Lock()
        self.pins = 0
        self.dead = False
        self.index: tuple[str, list[int]] | None = None
        """(life, sorted first seqs of the commit files seen): see ``loglocal._starts``."""
        self.seg: Any = None
        """Format 2: this handle's index of the records (``logsegment.Index``)."""
        self.torn: tuple[Any, ...] | None = None
        """Format 2: the head slot whose last record this handle found torn (a power loss:
        the other slot is the head until a commit writes over it)."""
        self.slots: list[tuple[bytes, Any] | None] = [None, None]
        """Per head slot, the record bytes this handle last decoded or wrote there and their
        head: a slot still starting with those bytes is that head, not decoded again
        (``loglocal._slot``)."""
        self.seen: tuple[str, int] | None = None
        """(life, write counter) of the newest head this handle read or wrote: a head that
        reads older in the same life is a damaged slot, not a tear (``loglocal._read``)."""

    def close(self) -> None:
        for fd in (self.hd, self.sd):
            try:
                os.close(fd)
            except OSError:
                pass


class LogTree:
    """Base of ``LocalLogCore``: the root, the session cache and locking, delete and listing."""

    def __init__(self, root: Path, *, cache_slots: int, writers: str) -> None:
        self.root_path = root
        self.writers = writers
        self.cache_slots = cache_slots
        self.dur = io.Durability()
        self._root_fd: int | None = None
        self._lock = threading.Lock()  # guards the root fd and the session cache
        self._sessions: OrderedDict[tuple[str, str], Session] = OrderedDict()
        self._pid = os.getpid()
        self._busy = 0
        self._closing: list[int] = []

    # ------------------------------------------------------------------ root and cache

    def _forked(self) -> None:
        """In a forked child: drop the parent's fds (closing a copy never unlocks)."""
        for ses in self._sessions.values():
            ses.close()
        self._sessions.clear()
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None
        self._pid = os.getpid()

    def root(self) -> int:
        """The fd of ``<root>/.sessionlog`` (created 0700 with its parents on first use)."""
        self.dur.check()
        with self._lock:
            if self._pid != os.getpid():
                self._forked()
            if self._root_fd is None:
                try:
                    io.make_root(self.root_path / LOG_DIR, self.dur)
                    fd = os.open(self.root_path / LOG_DIR, io.DIR_FLAGS)
                except OSError as exc:
                    raise io.mapped(exc, f"opening the session log root {self.root_path}") from exc
                if self.writers == "multi" and is_network(self.root_path):
                    os.close(fd)
                    raise StoreConfigurationError(
                        f"{self.root_path} is on a network filesystem ({fs_type(self.root_path)}),"
                        " where flock is unreliable: multi-writer mode is refused; pass "
                        "writers='single' if exactly one process writes this log"
                    )
                self._root_fd = fd
            return self._root_fd

    def call(self, func: Callable[..., T], *args: object) -> T:
        """Run one operation; a ``close`` meanwhile defers closing the fds it may use."""
        with self._lock:
            self._busy += 1
        try:
            return func(*args)
        finally:
            with self._lock:
                self._busy -= 1
                if not self._busy:
                    while self._closing:
                        os.close(self._closing.pop())

    def close(self) -> None:
        with self._lock:
            for ses in self._sessions.values():
                ses.dead = True
                if not ses.pins:
                    ses.close()
            self._sessions.clear()
            if self._root_fd is not None:
                if self._busy:
                    self._closing.append(self._root_fd)
                else:
                    os.close(self._root_fd)
                self._root_fd = None

    def _open(self, user_id: str, session_id: str, create: bool) -> Session | None:
        """The session's cached fds (opened, or created durably, when not cached), pinned."""
        ck = (user_id, session_id)
        with self._lock:
            if self._pid != os.getpid():
                self._forked()
            ses = self._sessions.get(ck)
            if ses is not None:
                self._sessions.move_to_end(ck)
                ses.pins += 1
                return ses
        root = self.root()
        new_dirs: list[int] = []
        sd = hd = -1
        try:
            parts = id_parts(user_id) + id_parts(session_id)
            try:
                got = io.walk(root, parts, create=create, dur=self.dur, pending=new_dirs)
            except FileNotFoundError:
                got = None  # (a concurrent delete removed a directory on the way)
            if got is None:
                if create:
                    raise StoreUnavailable("the session directory kept vanishing")
                return None
            sd = got
            try:
                hd = os.open(HEAD, HEAD_FLAGS, dir_fd=sd)
            except FileNotFoundError:
                if not create:
                    return None
                try:
                    hd = os.open(HEAD, HEAD_FLAGS | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=sd)
                except FileExistsError:
                    hd = os.open(HEAD, HEAD_FLAGS, dir_fd=sd)
                else:
                    new_dirs.append(os.dup(sd))  # the head's own entry
            for fd in new_dirs:  # every new entry durable before the session is used
                self.dur.fsync(fd, "a session log directory (new entry)")
        except BaseException:
            for fd in (hd, sd):
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            for fd in new_dirs:
                os.close(fd)
        ses = Session(sd, hd)
        ses.pins = 1
        with self._lock:
            if self.cache_slots:
                old = self._sessions.pop(ck, None)
                if old is not None:
                    self._retire(old)
                self._sessions[ck] = ses
                while len(self._sessions) > self.cache_slots:
                    _, out = self._sessions.popitem(last=False)
                    self._retire(out)
            else:
                ses.dead = True
        return ses

    def _retire(self, ses: Session) -> None:
        """(caller holds ``_lock``) drop a session from use; closed once unpinned."""
        ses.dead = True
        if not ses.pins:
            ses.close()

    def _unpin(self, ses: Session) -> None:
        with self._lock:
            ses.pins -= 1
            if ses.dead and not ses.pins:
                ses.close()

    def _forget(self, ck: tuple[str, str], ses: Session) -> None:
        with self._lock:
            if self._sessions.get(ck) is ses:
                del self._sessions[ck]
            ses.dead = True

    def locked(
        self,
        user_id: str,
        session_id: str,
        func: Callable[[Session], T],
        *,
        create: bool,
        exclusive: bool,
        absent: Callable[[], T],
    ) -> T:
        """``func(session)`` under the session's lock; ``absent()`` if there is no session
        (and ``create`` is false)."""
        self.dur.check()  # a poisoned handle reads and writes nothing
        ck = (user_id, session_id)
        for _ in range(RETRIES):
            ses = self._open(user_id, session_id, create)
            if ses is None:
                return absent()
            try:
                with ses.mutex:
                    fcntl.flock(ses.hd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                    try:
                        if os.fstat(ses.hd).st_nlink == 0:  # deleted while we waited
                            self._forget(ck, ses)
                            continue
                        return func(ses)
                    finally:
                        fcntl.flock(ses.hd, fcntl.LOCK_UN)
            finally:
                self._unpin(ses)
        raise StoreUnavailable(
            f"user_id={user_id!r} session_id={session_id!r}: the session log kept being "
            "deleted during the call"
        )

    # ------------------------------------------------------------------ delete and list

    def remove_session(self, user_id: str, session_id: str, ses: Session) -> None:
        """(under the session's exclusive lock) rename the session directory away (durably:
        the commit point of the delete), then remove it; the head is unlinked last."""
        parts = id_parts(user_id) + id_parts(session_id)
        pd = io.walk(self.root(), parts[:-1], create=False, dur=self.dur)
        if pd is None:
            return
        try:
            gone = io.tmp_name()
            os.rename(parts[-1], gone, src_dir_fd=pd, dst_dir_fd=pd)
            self.dur.fsync(pd, "the user's session log directory (delete)")
            for name in os.listdir(ses.sd):
                if name != HEAD:
                    io.rmtree_at(ses.sd, name)
            io.unlink_quiet(ses.sd, HEAD)
            os.rmdir(gone, dir_fd=pd)
        finally:
            os.close(pd)
        self._forget((user_id, session_id), ses)

    def session_ids(self, user_id: str) -> list[tuple[str, list[str]]]:
        """Every session id with a directory under the user's, sorted, with its path parts."""
        ud = io.walk(self.root(), id_parts(user_id), create=False, dur=self.dur)
        if ud is None:
            return []
        try:
            found = _leaves(ud, [])
        finally:
            os.close(ud)
        out = [(sid, parts) for parts in found if (sid := parts_to_id(parts)) is not None]
        return sorted(out)


def _leaves(fd: int, prefix: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    with os.scandir(fd) as it:
        entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    for name, is_dir in entries:
        if is_private(name) or not is_dir:
            continue
        if name.endswith(MORE):
            try:
                sub = os.open(name, io.DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                continue
            try:
                out += _leaves(sub, [*prefix, name])
            finally:
                os.close(sub)
        else:
            out.append([*prefix, name])
    return out
