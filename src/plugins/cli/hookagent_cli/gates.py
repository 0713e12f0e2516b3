"""One session, one call at a time, across ``hookagent`` processes.

Two ``hookagent run`` on one session at once used to race: the second lost its
compare-and-set (``VersionConflict``) and its input. The CLI's gate makes the second wait:

1. a store that offers a distributed gate is asked for it: a store object with a
   ``session_gate()`` method returning a ``hookagent.SessionGate`` (the convention this CLI
   documents), or the Redis store, whose ``RedisSessionGate`` the CLI builds on the store
   (same client and prefix, so every save is fenced);
2. any other store gets a local cross-process gate: an ``flock`` on a lock file in a private
   directory under the temp dir, named by a hash of the injectively encoded (store, agent,
   user, session). It serialises processes on one host only.

Either way a process that has to wait says so once ("waiting for session … held by another
process"), then waits in line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from hookagent import LocalSessionGate, SessionGate
from hookagent.errors import SessionBusy, StoreConfigurationError
from hookagent.store import Fence
from hookagent.store.ids import encode_id
from hookagent.store.memory import InMemoryAgentStateStore

POLL = 0.05
NOTICE_AFTER = 0.25  # a distributed gate that has not answered by then is held by someone


def _stderr(text: str) -> None:
    sys.stderr.write(f"hookagent: {text}\n")
    sys.stderr.flush()


def store_gate(store: object) -> SessionGate | None:
    """The distributed gate the store offers, if any."""
    offer = getattr(store, "session_gate", None)
    if callable(offer):
        gate = offer()
        if not isinstance(gate, SessionGate):
            raise StoreConfigurationError(
                f"{type(store).__name__}.session_gate() returned {gate!r}, not a SessionGate"
            )
        return gate
    # the store module is imported if and only if a Redis store was made (discovery imports
    # the package, whose names are lazy: reading one would import redis-py for nothing)
    redis = sys.modules.get("hookagent_store_redis.store")
    if redis is not None and isinstance(store, redis.RedisAgentStateStore):
        from hookagent_store_redis import RedisSessionGate

        return RedisSessionGate(store)
    return None


class CliSessionGate:
    """The gate a CLI configuration uses; it picks the real one from the store on first use."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.notify: Callable[[str], None] = _stderr
        self.kernel: Any = None  # set by build_config once the configuration exists
        self.inner: SessionGate | None = None
        self.distributed = False

    async def _inner(self) -> SessionGate:
        if self.inner is None:
            store = await self.kernel.store()
            gate = store_gate(store)
            self.distributed = gate is not None
            if gate is None and _private(store):
                gate = LocalSessionGate()  # nobody else can reach this process's memory
            self.inner = gate or FileLockGate(
                lock_dir(), _store_identity(store, self.kernel.config.state_store), self.agent_id
            )
        return self.inner

    @contextlib.asynccontextmanager
    async def acquire(
        self, user_id: str, session_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[Fence | None]:
        inner = await self._inner()
        if isinstance(inner, FileLockGate):
            async with inner.acquire(user_id, session_id, timeout=timeout, notify=self.notify) as f:
                yield f
            return
        async with contextlib.AsyncExitStack() as stack:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._notice_later, user_id, session_id)
                fence = await stack.enter_async_context(
                    inner.acquire(user_id, session_id, timeout=timeout)
                )
                tg.cancel_scope.cancel()
            yield fence

    async def _notice_later(self, user_id: str, session_id: str) -> None:
        await anyio.sleep(NOTICE_AFTER)
        self.notify(waiting_text(user_id, session_id, "the store's distributed gate"))


def waiting_text(user_id: str, session_id: str, holder: str) -> str:
    return (
        f"waiting for session {session_id!r} of user {user_id!r}: held by another process "
        f"({holder}); this call runs when it is free"
    )


def _store_identity(store: object, spec: object) -> str:
    """What two processes share when they share a store: its root directory, else its URL."""
    root = getattr(store, "root_path", None)
    if root is not None and not callable(root):
        return f"root:{Path(str(root)).resolve()}"
    return f"url:{spec}" if isinstance(spec, str) else f"type:{type(store).__qualname__}"


def _private(store: object) -> bool:
    """An in-memory store is this process's own: nobody else can hold its sessions."""
    return isinstance(store, InMemoryAgentStateStore)


def lock_dir() -> Path:
    """``$TMPDIR/hookagent-cli-locks-<uid>``: created 0700, refused unless it is ours."""
    path = Path(tempfile.gettempdir()) / f"hookagent-cli-locks-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise StoreConfigurationError(
            f"the CLI's lock directory {path} is not a private directory of this user; "
            "remove it or set TMPDIR"
        )
    return path


class FileLockGate:
    """A cross-process gate on one host: ``flock`` on a file per (store, agent, user, session).

    The lock file holds the holder's pid (for the waiting message); files are never removed
    (removing one under a waiter would let two processes hold "the" lock).
    """

    def __init__(self, directory: Path, store_id: str, agent_id: str) -> None:
        self.directory, self.store_id, self.agent_id = directory, store_id, agent_id

    def path(self, user_id: str, session_id: str) -> Path:
        key = "/".join(
            encode_id(part) for part in (self.store_id, self.agent_id, user_id, session_id)
        )
        return self.directory / (hashlib.sha256(key.encode()).hexdigest() + ".lock")

    @contextlib.asynccontextmanager
    async def acquire(
        self,
        user_id: str,
        session_id: str,
        *,
        timeout: float | None = None,
        notify: Callable[[str], None] = _stderr,
    ) -> AsyncIterator[None]:
        path = self.path(user_id, session_id)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
        try:
            if not _try_lock(fd):
                notify(waiting_text(user_id, session_id, f"pid {_holder(fd)}, lock {path}"))
                with anyio.move_on_after(timeout) as scope:
                    while not _try_lock(fd):  # noqa: ASYNC110 - flock has no event to wait on
                        await anyio.sleep(POLL)
                if scope.cancelled_caught:
                    raise SessionBusy(
                        f"session user_id={user_id!r} session_id={session_id!r} stayed busy "
                        f"for {timeout}s (held by another process, lock {path})"
                    )
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            try:
                yield None
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            return False
        raise
    return True


def _holder(fd: int) -> str:
    raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return raw if raw.isdigit() else "unknown"
