"""``FsspecJsonFileStore``: the same layout on any fsspec filesystem.

``writers="single"`` (default) is described here; ``writers="multi"`` uses conditional writes
(exclusive create, see ``remotecas``) and is refused on a backend that has none.

Object stores have no append, no rename and no flock, so the history is kept as segment
objects, each written whole by one PUT: ``<key>/g<gen>/<index>`` holds the records appended by
one save, and the ``head`` object (written last, by one PUT) names the generation and how many
segments and messages are committed. A writer killed between the segment PUT and the head PUT
leaves an uncommitted segment that the next save overwrites. After ``MAX_SEGMENTS`` appends the
history is rewritten into one segment of a new generation.

In single-writer mode compare-and-set is done under a lock held in this process, so exactly
ONE process may write a given root. Nothing here is crash-safe against a power loss beyond
what the backend's own PUT guarantees.
"""

from __future__ import annotations

import errno
import functools
import secrets
import threading
import warnings
from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import fsspec  # type: ignore[import-untyped]
from hookagent.codec import encode_head, encode_msg
from hookagent.errors import (
    CorruptState,
    StorageFull,
    StoreConfigurationError,
    StoreUnavailable,
    VersionConflict,
)
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import (
    AGENT_STATE_KEY,
    UNCONDITIONAL,
    ExpectedVersion,
    Fence,
    SessionPage,
    Versioned,
)
from hookagent.store.ids import (
    check_fence,
    check_id,
    check_slot,
    check_state_slot,
    slot_name,
)

from .cache import Cached, HistoryCache
from .guards import check_writable, decode_loaded, fence_is_newer
from .layout import FENCE, HEAD, id_parts, parts_to_id, slot_parts
from .local import check_cache_slots, check_expected, check_page, check_writers
from .records import (
    Head,
    decode_fence,
    decode_head_file,
    decode_payloads,
    encode_fence,
    encode_head_file,
    frame,
    unframe,
)
from .remotecas import CasCore
from .remotelist import leaves, list_page

MAX_SEGMENTS = 256
OPEN = ".open"
"""Marks a key whose history objects no head names yet (a first save) or any more (a delete)."""
_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _root_lock(protocol: str, root: str) -> threading.Lock:
    """One lock per (protocol, root) in this process, shared by every store instance on it."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault((protocol, root), threading.Lock())


VERIFIED_CONDITIONAL = frozenset({"file", "local", "memory"})
"""Filesystems whose exclusive create is verified atomic here: ``O_EXCL`` on local disk, one
process's dict for ``memory://`` (which no other host sees)."""


class UnverifiedConditionalWrites(UserWarning):
    """``writers="multi"`` on a filesystem whose exclusive create this store cannot verify."""


class FsspecJsonFileStore:
    """Versioned slots on an fsspec filesystem (``memory://``, ``s3://`` ...), one writer.

    :param url: an fsspec URL; the local filesystem is served by ``LocalJsonFileStore``.
    :param writers: ``"single"`` (this process is the only writer; an in-process lock) or
        ``"multi"`` (compare-and-set by exclusive create; probed at construction, refused
        with ``StoreConfigurationError`` where the backend has no conditional writes).
    :param storage_options: passed to the fsspec filesystem (credentials, endpoint ...).
    :param fs: an fsspec filesystem instance to use with ``url`` as its root path (tests use
        the local fsspec filesystem to run the multi-writer protocol across processes).
    """

    def __init__(
        self,
        url: str,
        *,
        writers: str = "single",
        storage_options: dict[str, Any] | None = None,
        cache_slots: int = 256,
        fs: Any = None,
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
                self.fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
            except (ImportError, ValueError) as exc:
                raise StoreConfigurationError(f"{url!r}: fsspec cannot open it: {exc}") from exc
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        if protocol in ("file", "local") and fs is None:
            raise StoreConfigurationError(f"{url!r}: use LocalJsonFileStore for local paths")
        self.url = url
        # kernel.store_locality: an in-process memory:// filesystem, else every host
        self.locality = "process" if protocol == "memory" else "shared"
        self.writers = writers
        self.root = root.rstrip("/")
        self._lock = _root_lock(protocol, self.root)
        self._cache = HistoryCache(cache_slots)
        self._cas: CasCore | None = None
        if writers == "multi":
            self._cas = CasCore(self.fs, self.root, cache_slots)
            self._guard(self._cas.probe)
            if protocol not in VERIFIED_CONDITIONAL:
                warnings.warn(
                    f"{url!r}: writers='multi' relies on fsspec's exclusive create ('xb') of "
                    f"the {protocol!r} filesystem being one atomic conditional write. The "
                    "probe passed, but it cannot tell that from a check-then-put: there, two "
                    "hosts saving one slot at once can both be acknowledged and one save is "
                    "lost with no error. Only use it where the driver documents 'xb' as a "
                    "conditional write (see docs/stores/jsonfile.md)",
                    UnverifiedConditionalWrites,
                    stacklevel=2,
                )

    def __repr__(self) -> str:
        return f"FsspecJsonFileStore({self.url!r}, writers={self.writers!r})"

    def _path(self, parts: list[str]) -> str:
        return "/".join([self.root, *parts])

    async def _run(self, func: Any, *args: Any, where: str = "") -> Any:
        call = functools.partial(self._guard, func, *args, where=where)
        return await anyio.to_thread.run_sync(call)

    def _guard(self, func: Any, *args: Any, where: str = "") -> Any:
        """``func(*args)`` with OS errors typed; ``where`` names the slot in the message."""
        at = f"{where} on {self.url}" if where else self.url
        try:
            return func(*args)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                raise StorageFull(f"{at}: the storage is full ({exc})") from exc
            raise StoreUnavailable(f"{at}: {exc}") from exc

    def _cat(self, path: str) -> bytes | None:
        try:
            data: bytes = self.fs.cat_file(path)
        except FileNotFoundError:
            return None
        return data

    # ------------------------------------------------------------------ reads

    def _head(self, kpath: str, where: str) -> Head | None:
        """The committed head; None when absent, ``CorruptState`` when it is missing over a
        history that no first save or delete in flight (the ``.open`` marker) explains."""
        data = self._cat(f"{kpath}/{HEAD}")
        if data is not None:
            return decode_head_file(data, where)
        try:
            names = [e.rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(kpath, detail=False)]
        except FileNotFoundError:
            return None
        gens = sorted(n for n in names if n.startswith("g"))
        if gens and OPEN not in names:
            raise CorruptState(
                f"{where}: the head is missing but the history remains ({', '.join(gens)}): "
                "a lost head. Nothing is read, written or removed; inspect it, then delete "
                "the slot to repair it"
            )
        return None

    def _history(self, kpath: str, ck: tuple[str, str, str], head: Head, where: str) -> list[Msg]:
        hit = self._cache.get(ck)
        msgs: tuple[Msg, ...] = ()
        start = 0
        if hit is not None and hit.gen == head.gen and hit.size <= head.size:
            msgs, start = hit.msgs, hit.size
        for index in range(start, head.size):
            data = self._cat(f"{kpath}/g{head.gen}/{index:08d}")
            if data is None:
                raise CorruptState(f"{where}: committed history segment {index} is missing")
            msgs += tuple(decode_payloads(unframe(data, None, where), where))
        if len(msgs) != head.count:
            raise CorruptState(f"{where}: {len(msgs)} messages where the head commits {head.count}")
        self._cache.put(ck, Cached(head.gen, head.count, head.size, msgs))
        return list(msgs)

    def _get(self, user_id: str, session_id: str, key: str) -> Versioned:
        if self._cas is not None:
            return self._cas.get(user_id, session_id, key)
        where = f"user_id={user_id!r} session_id={session_id!r} key={key!r}"
        kpath = self._path(slot_parts(user_id, session_id) + id_parts(key))
        for _ in range(3):
            with self._lock:  # in this process, reads see whole saves only
                head = self._head(kpath, where)
                if head is None:
                    return Versioned(None, 0)
                try:
                    msgs = self._history(kpath, (user_id, session_id, key), head, where)
                except CorruptState:
                    again = self._head(kpath, where)  # a reader in another process may race
                    if again is not None and again.gen != head.gen:  # a rewrite: read again
                        continue
                    raise
            state = decode_loaded(head.state, msgs, (user_id, session_id, key))
            return Versioned(state, head.version)
        raise StoreUnavailable(f"{where}: the slot kept being rewritten during the read")

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        got: Versioned = await self._run(
            self._get, user_id, session_id, key, where=slot_name(user_id, session_id, key)
        )
        return got

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)
        kpath = self._path(slot_parts(user_id, session_id) + id_parts(key))
        where = slot_name(user_id, session_id, key)
        found: bool = await self._run(self._key_live, kpath, where, True, where=where)
        return found

    def _key_live(self, kpath: str, where: str, strict: bool = False) -> bool:
        """Whether the key holds a state; ``strict``: a lost head raises (as a load does)."""
        if self._cas is not None:
            _, meta, _ = self._cas.latest(kpath, where)
            return meta is not None and not meta["deleted"]
        if strict:
            return self._head(kpath, where) is not None
        return bool(self.fs.exists(f"{kpath}/{HEAD}"))

    # ------------------------------------------------------------------ save

    def _save(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected: ExpectedVersion,
        key: str,
        fence: Fence | None,
    ) -> int:
        if self._cas is not None:
            return self._cas.save(user_id, session_id, state, expected, key, fence)
        where = f"user_id={user_id!r} session_id={session_id!r} key={key!r}"
        head_state = encode_head(state)
        history = state.context
        base = min(history.unchanged_prefix, len(history))
        tail = [encode_msg(m) for m in history[base:]]
        spath = self._path(slot_parts(user_id, session_id))
        kpath = self._path(slot_parts(user_id, session_id) + id_parts(key))
        ck = (user_id, session_id, key)
        with self._lock:
            newer = False
            if fence is not None:
                raw = self._cat(f"{spath}/{FENCE}")
                newer = fence_is_newer(
                    fence, None if raw is None else decode_fence(raw, where), where
                )
            head = self._head(kpath, where)
            current = 0 if head is None else head.version
            if head is not None:
                check_writable(head.state, ck, where)  # (UNCONDITIONAL too)
            if expected is not UNCONDITIONAL and expected != current:
                raise VersionConflict(user_id, session_id, key, expected, current)
            if newer:
                assert fence is not None
                self.fs.pipe_file(f"{spath}/{FENCE}", encode_fence(fence.epoch, fence.owner))
            if (
                head is not None
                and expected == current
                and 0 < base == head.count
                and head.size < MAX_SEGMENTS
            ):
                if tail:
                    self.fs.pipe_file(f"{kpath}/g{head.gen}/{head.size:08d}", frame(tail))
                size = head.size + (1 if tail else 0)
                new = Head(current + 1, head.gen, head.count + len(tail), size, head_state)
                self.fs.pipe_file(f"{kpath}/{HEAD}", encode_head_file(new))
                hit = self._cache.get(ck)
                if hit is not None and (hit.gen, hit.size) == (head.gen, head.size):
                    msgs = hit.msgs + tuple(decode_payloads(tail, where))
                    self._cache.put(ck, Cached(new.gen, new.count, new.size, msgs))
            else:
                payloads = [encode_msg(m) for m in history[:base]] + tail
                gen = secrets.token_hex(8)
                if head is None:  # a first save: what it leaves if killed is not a lost head
                    self.fs.pipe_file(f"{kpath}/{OPEN}", b"")
                self.fs.pipe_file(f"{kpath}/g{gen}/{0:08d}", frame(payloads))
                new = Head(current + 1, gen, len(payloads), 1, head_state)
                self.fs.pipe_file(f"{kpath}/{HEAD}", encode_head_file(new))
                if head is not None:
                    self._rm(f"{kpath}/g{head.gen}")
                else:
                    self._clear_open(kpath, keep=gen)
                self._cache.drop(*ck)
        history.mark_committed()
        return current + 1

    def _clear_open(self, kpath: str, keep: str) -> None:
        """After a first save's head: the leftovers of killed first saves, then ``.open``."""
        try:
            names = [e.rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(kpath, detail=False)]
        except FileNotFoundError:
            names = []
        for name in names:
            if name.startswith("g") and name != f"g{keep}":
                self._rm(f"{kpath}/{name}")
        self._rm(f"{kpath}/{OPEN}")

    def _rm(self, path: str) -> None:
        try:
            self.fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass

    async def save_if_version(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected_version: ExpectedVersion,
        *,
        key: str = AGENT_STATE_KEY,
        fence: Fence | None = None,
    ) -> int:
        check_slot(user_id, session_id, key)
        check_state_slot(state, user_id, session_id, key)
        check_expected(expected_version)
        check_fence(fence)
        version: int = await self._run(
            self._save, user_id, session_id, state, expected_version, key, fence,
            where=slot_name(user_id, session_id, key),
        )  # fmt: skip
        return version

    # ------------------------------------------------------------------ delete and list

    def _leaves(self, path: str, prefix: list[str]) -> list[list[str]]:
        return leaves(self.fs, path, prefix)

    def _delete(self, user_id: str, session_id: str, key: str | None) -> bool:
        spath = self._path(slot_parts(user_id, session_id))
        if self._cas is not None:  # tombstones, ordered with every compare-and-set
            keys = [parts_to_id(p) for p in self._leaves(spath, [])] if key is None else [key]
            existed = False
            for k in keys:
                if k is not None:
                    existed = self._cas.delete_key(user_id, session_id, k) or existed
            return existed
        with self._lock:
            leaves = self._leaves(spath, []) if key is None else [id_parts(key)]
            existed = False
            for parts in leaves:
                kpath = "/".join([spath, *parts])
                if self.fs.exists(f"{kpath}/{HEAD}"):
                    existed = True
                    self.fs.pipe_file(f"{kpath}/{OPEN}", b"")  # (killed next: not a lost head)
                    self.fs.rm_file(f"{kpath}/{HEAD}")
                self._rm(kpath)
            if key is None:
                self._rm(spath)
            self._cache.drop(user_id, session_id, key)
        return existed

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        where = slot_name(user_id, session_id, "*" if key is None else key)
        existed: bool = await self._run(self._delete, user_id, session_id, key, where=where)
        return existed

    def _list(self, user_id: str, limit: int, cursor: str | None) -> SessionPage:
        upath = self._path(id_parts(user_id))
        return list_page(
            self.fs, upath, limit, cursor, lambda k: self._key_live(k, f"user_id={user_id!r}")
        )

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page(limit, cursor)
        page: SessionPage = await self._run(
            self._list, user_id, limit, cursor, where=f"the sessions of user_id={user_id!r}"
        )
        return page

    async def aclose(self) -> None:
        self._cache.clear()
