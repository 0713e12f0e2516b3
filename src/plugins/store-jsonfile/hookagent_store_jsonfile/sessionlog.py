"""The session log on files (``hookagent.sessionlog.SessionLog``): the async faces and the
URL factory the plugin registers through ``hookagent_register_session_logs``.

``JsonFileSessionLog`` serves local disk (``loglocal``: flock, in-place head, one fdatasync
per commit in format 2), ``FsspecJsonFileSessionLog`` fsspec filesystems (``logremote``: one head object
per version, created exclusively). Arguments are checked here with the kernel's rules
before any thread hop; the decisions are ``hookagent.sessionlog.rules``'; OS errors become
the store's typed errors (``StorageFull``, ``StorageDurabilityError``, ``StoreUnavailable``).
The URL rules and options are the state store's (``config``): the root is the URL's path.
"""

from __future__ import annotations

import errno
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import fsspec  # type: ignore[import-untyped]
from hookagent.errors import StorageFull, StoreConfigurationError, StoreUnavailable
from hookagent.sessionlog import CommitResult, LogEvent, LogHead, LogWriter, Row, SessionPage
from hookagent.sessionlog.rules import (
    check_after,
    check_batch_id,
    check_lease,
    check_owner,
    check_session,
    check_writer,
    encode_commit,
)
from hookagent.store.ids import check_cursor, check_id, check_page_limit

from . import logplant
from . import posixio as io
from .config import LOCAL_SCHEMES, _query_options, local_path
from .config import LOG_SCHEMES as LOG_SCHEMES  # its old home
from .local import check_cache_slots, check_root, check_writers, run_blocking
from .loglocal import LocalLogCore
from .logremote import FsspecLogCore
from .remote import VERIFIED_CONDITIONAL, UnverifiedConditionalWrites

_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class _Face:
    """The async methods both backends share: checks, then the core in a worker thread."""

    locality: str
    _core: Any

    # ---- for the conformance suite's crash checks: bytes behind the log's back
    def plant_orphan(
        self, user_id: str, session_id: str, batch_id: str, events: Sequence[LogEvent]
    ) -> None:
        """A commit written at ``head.seq + 1`` whose head never moved (a crash mid-commit)."""
        logplant.plant_orphan(self, user_id, session_id, batch_id, events)

    def plant_head(self, user_id: str, session_id: str, seq: int) -> None:
        """Move the head to ``seq`` without a commit (a head pointing at a missing commit)."""
        logplant.plant_head(self, user_id, session_id, seq)

    async def _run(self, func: Any, *args: Any) -> Any:
        raise NotImplementedError

    async def head(self, user_id: str, session_id: str) -> LogHead:
        check_session(user_id, session_id)
        head: LogHead = await self._run(self._core.head, user_id, session_id)
        return head

    async def acquire(
        self, user_id: str, session_id: str, owner: str, lease_seconds: float
    ) -> LogWriter:
        lease = _acquire_args(user_id, session_id, owner, lease_seconds)
        w: LogWriter = await self._run(self._core.acquire, user_id, session_id, owner, lease)
        return w

    async def renew(self, writer: LogWriter, lease_seconds: float) -> LogWriter:
        check_writer(writer)
        lease = check_lease(lease_seconds)
        w: LogWriter = await self._run(self._core.renew, writer, lease)
        return w

    async def release(self, writer: LogWriter) -> bool:
        check_writer(writer)
        done: bool = await self._run(self._core.release, writer)
        return done

    async def seal(self, user_id: str, session_id: str, owner: str) -> None:
        check_session(user_id, session_id)
        check_owner(owner)
        await self._run(self._core.seal, user_id, session_id, owner)

    async def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool:
        check_session(user_id, session_id)
        check_owner(owner)
        sealed: bool = await self._run(self._core.is_sealed, user_id, session_id, owner)
        return sealed

    async def commit(
        self,
        writer: LogWriter,
        batch_id: str,
        expected_seq: int,
        events: Sequence[LogEvent],
        *,
        finish: bool = False,
    ) -> CommitResult:
        check_writer(writer)
        check_batch_id(batch_id)
        data, digest = encode_commit(events)  # encoded and checked before the lock
        result: CommitResult = await self._run(
            self._core.commit, writer, batch_id, expected_seq, events, data, digest, finish
        )
        return result

    async def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None = None
    ) -> list[LogEvent]:
        check_session(user_id, session_id)
        check_after(seq, limit)
        out: list[LogEvent] = await self._run(
            self._core.read_after, user_id, session_id, seq, limit
        )
        return out

    async def read_commits_after(
        self, user_id: str, session_id: str, seqs: Sequence[int]
    ) -> tuple[int, list[tuple[int, int, bytes] | None]]:
        """``read_after(seq, 1)`` undecoded for each seq (``point_read`` decodes one): the
        head's seq and the commit holding ``seq + 1``, in one worker-thread hop."""
        check_session(user_id, session_id)
        for seq in seqs:
            check_after(seq, 1)
        got: tuple[int, list[tuple[int, int, bytes] | None]] = await self._run(
            self._core.read_commits, user_id, session_id, list(seqs)
        )
        return got

    async def read_rows_after(self, user_id: str, session_id: str, seq: int) -> list[Row]:
        """``read_after(seq)`` as ``Row`` tuples (a cold projection's fast path; on fsspec
        they are made from ``read_after``'s events)."""
        check_session(user_id, session_id)
        check_after(seq, None)
        read = getattr(self._core, "read_rows", None)
        if read is None:
            return [
                (e.seq, e.event_id, e.type, e.occurred_at, dict(e.payload), e.required,
                 e.run_id, e.turn_id)
                for e in await self.read_after(user_id, session_id, seq)
            ]  # fmt: skip
        out: list[Row] = await self._run(read, user_id, session_id, seq)
        return out

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)
        page: SessionPage = await self._run(self._core.list_page, user_id, limit, cursor)
        return page

    async def delete(self, user_id: str, session_id: str) -> bool:
        check_session(user_id, session_id)
        existed: bool = await self._run(self._core.delete, user_id, session_id)
        return existed


class JsonFileSessionLog(_Face):
    """The session log in files under ``root/.sessionlog/`` on a local disk (every process
    of this machine; ``locality = "host"``).

    :param root: the directory (created 0700 with its parents on first use); a state store
        may share it: the log's tree is a private name the state store never touches.
    :param writers: ``"multi"`` (default: processes serialised by flock) or ``"single"``
        (you promise one process: required on a network filesystem, where flock is not
        trusted and ``"multi"`` is refused).
    :param cache_slots: sessions whose directory and head fds (and commit index) this
        instance keeps open (0: open them per call).
    :param clock: the lease clock (tests); every process sharing the log must agree on it.
    """

    locality = "host"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        writers: str = "multi",
        cache_slots: int = 256,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = check_root(root)
        self.writers = check_writers(writers)
        self._core = LocalLogCore(
            self.root, cache_slots=check_cache_slots(cache_slots), writers=writers, clock=clock
        )

    def __repr__(self) -> str:
        return f"JsonFileSessionLog({str(self.root)!r})"

    def another_handle(self) -> JsonFileSessionLog:
        """A second handle on the same files (its own fds and caches, as another process)."""
        return JsonFileSessionLog(
            self.root, writers=self.writers, cache_slots=self._core.cache_slots,
            clock=self._core.clock,
        )  # fmt: skip

    async def _run(self, func: Any, *args: Any) -> Any:
        return await run_blocking(self._core.call, _mapped, func, *args)

    async def acquire(
        self, user_id: str, session_id: str, owner: str, lease_seconds: float
    ) -> LogWriter:
        """On a cached session whose lock is free, without a thread hop (``acquire_now``)."""
        lease = _acquire_args(user_id, session_id, owner, lease_seconds)
        core = self._core
        now: LogWriter | None = core.call(
            _mapped, core.acquire_now, user_id, session_id, owner, lease
        )
        if now is not None:
            return now
        w: LogWriter = await self._run(core.acquire, user_id, session_id, owner, lease)
        return w

    async def aclose(self) -> None:
        """Release the open fds; a later call opens them again."""
        self._core.close()


def _acquire_args(user_id: object, session_id: object, owner: object, lease: object) -> float:
    """``acquire``'s argument checks (both faces, both paths): the lease in seconds."""
    check_session(user_id, session_id)
    check_owner(owner)
    return check_lease(lease)


def _mapped(func: Callable[..., Any], *args: Any) -> Any:
    try:
        return func(*args)
    except OSError as exc:
        raise io.mapped(exc, "the session log") from exc


class FsspecJsonFileSessionLog(_Face):
    """The session log on an fsspec filesystem (``s3://bucket/prefix`` ...).

    :param writers: ``"single"`` (default: this process is the only writer of the root; an
        in-process lock) or ``"multi"`` (exclusive create decides every change; probed at
        construction, refused where the backend has none, and ``UnverifiedConditionalWrites``
        where it cannot be verified: docs/stores/jsonfile.md).
    :param fs: an fsspec filesystem to use with ``url`` as its root path (tests).
    """

    def __init__(
        self,
        url: str,
        *,
        writers: str = "single",
        storage_options: Mapping[str, Any] | None = None,
        cache_slots: int = 256,
        fs: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        try:
            check_writers(writers)
            check_cache_slots(cache_slots)
        except StoreConfigurationError as exc:
            raise StoreConfigurationError(f"{url!r}: {exc}") from None
        if storage_options is not None and not isinstance(storage_options, Mapping):
            raise StoreConfigurationError(
                f"{url!r}: storage_options must be a mapping or None, got {storage_options!r}"
            )
        if fs is not None:
            self.fs, root = fs, url
        else:
            try:
                self.fs, root = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
            except (ImportError, ValueError) as exc:
                raise StoreConfigurationError(f"{url!r}: fsspec cannot open it: {exc}") from exc
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        if protocol in ("file", "local") and fs is None:
            raise StoreConfigurationError(f"{url!r}: use JsonFileSessionLog for local paths")
        self.url, self.writers, self._protocol = url, writers, protocol
        self.locality = "process" if protocol == "memory" else "shared"
        root = root.rstrip("/")
        with _LOCKS_GUARD:
            lock = _LOCKS.setdefault((protocol, root), threading.Lock())
        self._core = FsspecLogCore(self.fs, root, writers=writers, lock=lock, clock=clock)
        if writers == "multi":
            self._guard(self._core.cas.probe)
            if protocol not in VERIFIED_CONDITIONAL:
                warnings.warn(
                    f"{url!r}: writers='multi' relies on fsspec's exclusive create ('xb') of "
                    f"the {protocol!r} filesystem being one atomic conditional write; where "
                    "it is a check-then-put two hosts can both move one session's head and "
                    "one change is lost with no error (see docs/stores/jsonfile.md)",
                    UnverifiedConditionalWrites,
                    stacklevel=2,
                )

    def __repr__(self) -> str:
        return f"FsspecJsonFileSessionLog({self.url!r}, writers={self.writers!r})"

    def another_handle(self) -> FsspecJsonFileSessionLog:
        return FsspecJsonFileSessionLog(
            self.url, writers=self.writers, fs=self.fs, clock=self._core.clock
        )

    def _guard(self, func: Callable[..., Any], *args: Any) -> Any:
        try:
            return func(*args)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                raise StorageFull(f"{self.url}: the storage is full ({exc})") from exc
            raise StoreUnavailable(f"the session log on {self.url}: {exc}") from exc

    async def _run(self, func: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: self._guard(func, *args))

    async def aclose(self) -> None:
        return None


def open_session_log(
    url: str | os.PathLike[str], **options: Any
) -> JsonFileSessionLog | FsspecJsonFileSessionLog:
    """The log a URL or path names, with the state store's rules: ``file:///abs``,
    ``jsonfile://path`` or a plain path on local disk; ``s3://``, ``gs://`` ... on fsspec.
    Options as keyword arguments or in the query string (keywords win): ``writers``,
    ``cache_slots``; ``storage_options`` (keyword only) for fsspec."""
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise StoreConfigurationError(f"a session log URL must be a non-empty str, got {url!r}")
    query = urlsplit(url).query if "://" in url else ""
    opts = {**_query_options(query, url), **options}
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("", *LOCAL_SCHEMES):
        unknown = set(opts) - {"writers", "cache_slots"}
        if unknown:
            raise StoreConfigurationError(
                f"{url!r}: unknown session log options {sorted(unknown)} (writers, cache_slots)"
            )
        return JsonFileSessionLog(local_path(url), **opts)
    if scheme not in LOG_SCHEMES:
        raise StoreConfigurationError(f"{url!r}: this plugin serves no {scheme!r} session log")
    unknown = set(opts) - {"writers", "cache_slots", "storage_options"}
    if unknown:
        raise StoreConfigurationError(
            f"{url!r}: unknown session log options {sorted(unknown)} "
            "(writers, cache_slots, storage_options)"
        )
    return FsspecJsonFileSessionLog(url.split("?", 1)[0], **opts)
