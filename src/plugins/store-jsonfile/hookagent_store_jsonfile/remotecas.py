"""``FsspecCasStore``: multi-writer slots on fsspec filesystems with conditional writes.

Compare-and-set is an exclusive create (fsspec mode ``"xb"``: ``If-None-Match: *`` on object
stores that support it, ``O_EXCL`` locally) of one head object per version::

    <key>/b<version // 1024>/v<version>   head: metadata + state sections, one PUT
    <key>/g<gen>/<index>-<nonce>          history segments named by the heads

A writer reads the newest head, writes its segment (a name no one else uses), then creates
``v<n+1>``; if another writer created it first, the create fails and the save is a
``VersionConflict`` (its segment is removed). Head names are never freed: superseded heads
are emptied, not removed (a freed name would let a stale writer win a create), and heads are
bucketed by 1,024 so finding the newest lists two short directories. A delete is a tombstone head created the same way, so a writer that read the
slot before the delete cannot resurrect it; versions restart at 1 after a delete (the head
keeps the internal version at which the slot was recreated). Fencing epochs are kept in the
heads, so they are per key here (the local store keeps them per session).

The backend is probed at first use: a second exclusive create of the same object must fail.
A backend that silently overwrites, or rejects ``"xb"``, is refused with
``StoreConfigurationError``.
"""

from __future__ import annotations

import errno
import re
import secrets
import struct
import threading
import time
import zlib
from typing import Any

from hookagent.codec import MAX_STATE_BYTES, dumps, encode_head, encode_msg, loads
from hookagent.errors import (
    CorruptState,
    StoreConfigurationError,
    StoreUnavailable,
    VersionConflict,
)
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import UNCONDITIONAL, ExpectedVersion, Fence, Versioned
from hookagent.store.ids import slot_name

from .cache import Cached, HistoryCache
from .guards import check_writable, decode_loaded, fence_is_newer
from .layout import id_parts, slot_parts
from .records import decode_payloads, frame, unframe

MAGIC = b"HAJFCAS1"
_FIXED = struct.Struct(">III")
_HEAD_NAME = re.compile(r"v(\d{16})$")
_BUCKET_NAME = re.compile(r"b(\d{10})$")
BUCKET = 1024
MAX_SEGMENTS = 256
_RETRIES = 8
_READ_RETRIES = 25


def encode_cas_head(meta: dict[str, Any], state: bytes) -> bytes:
    body = dumps(meta, what="head metadata") + state
    meta_len = len(body) - len(state)
    return MAGIC + _FIXED.pack(meta_len, len(state), zlib.crc32(body)) + body


def decode_cas_head(data: bytes, where: str) -> tuple[dict[str, Any], bytes]:
    fixed = len(MAGIC) + _FIXED.size
    if len(data) < fixed or not data.startswith(MAGIC):
        raise CorruptState(f"{where}: not a head object")
    meta_len, state_len, crc = _FIXED.unpack_from(data, len(MAGIC))
    body = data[fixed:]
    if meta_len + state_len != len(body) or state_len > MAX_STATE_BYTES or zlib.crc32(body) != crc:
        raise CorruptState(f"{where}: head object is damaged")
    meta = loads(body[:meta_len], what=f"{where} head metadata")
    ok = (
        isinstance(meta, dict)
        and isinstance(meta.get("segs"), list)
        and all(isinstance(s, str) and re.fullmatch(r"\d{6}-[0-9a-f]{16}", s) for s in meta["segs"])
        and isinstance(meta.get("gen"), str)
        and re.fullmatch(r"[0-9a-f]{16}", meta["gen"]) is not None
        and all(type(meta.get(k)) is int and meta[k] >= 0 for k in ("base", "count", "epoch"))
        and type(meta.get("deleted")) is bool
        and (meta.get("owner") is None or isinstance(meta["owner"], str))
    )
    if not ok:
        raise CorruptState(f"{where}: head metadata is malformed")
    return meta, body[meta_len:]


class CasCore:
    """Blocking implementation of the versioned-head protocol (run in worker threads)."""

    def __init__(self, fs: Any, root: str, cache_slots: int) -> None:
        self.fs, self.root = fs, root.rstrip("/")
        self.cache = HistoryCache(cache_slots)
        self._probed = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ primitives

    def probe(self) -> None:
        """Refuse a backend whose exclusive create is not exclusive."""
        if self._probed:
            return
        path = f"{self.root}/.probe-{secrets.token_hex(8)}"
        exclusive = False
        try:
            self.create(path, b"1")
            try:
                self.create(path, b"2")
            except FileExistsError:
                exclusive = True
        except (NotImplementedError, ValueError, TypeError) as exc:
            raise StoreConfigurationError(
                f"{self.root}: exclusive create ('xb') is not supported ({exc}); "
                "multi-writer mode is refused (use writers='single')"
            ) from exc
        finally:
            self.rm(path)
        if not exclusive:
            raise StoreConfigurationError(
                f"{self.root}: a second exclusive create succeeded: this filesystem has no "
                "conditional writes, so multi-writer mode is refused (use writers='single')"
            )
        self._probed = True

    def create(self, path: str, data: bytes) -> None:
        """Exclusive create; FileExistsError if the object exists."""
        parent = path.rsplit("/", 1)[0]
        for attempt in range(3):
            try:
                self.fs.makedirs(parent, exist_ok=True)
                break
            except FileExistsError:
                # directory-backed filesystems: the directory was removed (a rewrite cleaning
                # up a superseded generation) between mkdir's EEXIST and its isdir check
                if attempt == 2:
                    raise FileNotFoundError(errno.ENOENT, "removed while created", parent) from None
        with self.fs.open(path, "xb") as fh:
            fh.write(data)

    def cat(self, path: str) -> bytes | None:
        try:
            data: bytes = self.fs.cat_file(path)
        except FileNotFoundError:
            return None
        return data

    def rm(self, path: str) -> None:
        """Best-effort removal (cleanup paths only: never the reason a call fails)."""
        try:
            self.fs.rm(path, recursive=True)
        except OSError:
            pass

    def kpath(self, user_id: str, session_id: str, key: str) -> str:
        return "/".join([self.root, *slot_parts(user_id, session_id), *id_parts(key)])

    def head_path(self, kpath: str, version: int) -> str:
        return f"{kpath}/b{version // BUCKET:010d}/v{version:016d}"

    def newest(self, kpath: str) -> int:
        """The highest head version (0 if none): the last bucket, then its last head."""
        try:
            buckets = sorted(
                int(m.group(1))
                for n in self.fs.ls(kpath, detail=False)
                if (m := _BUCKET_NAME.match(n.rstrip("/").rsplit("/", 1)[-1]))
            )
        except FileNotFoundError:
            return 0
        for bucket in reversed(buckets):
            try:
                names = self.fs.ls(f"{kpath}/b{bucket:010d}", detail=False)
            except FileNotFoundError:
                continue
            found = [
                int(m.group(1))
                for n in names
                if (m := _HEAD_NAME.match(n.rstrip("/").rsplit("/", 1)[-1]))
            ]
            if found:
                return max(found)
        return 0

    def latest(self, kpath: str, where: str) -> tuple[int, dict[str, Any] | None, bytes]:
        """(internal version, metadata, state bytes) of the newest head; (0, None, b"")."""
        for attempt in range(_READ_RETRIES):
            version = self.newest(kpath)
            if not version:
                return 0, None, b""
            data = self.cat(self.head_path(kpath, version))
            try:
                if not data:  # emptied by a newer writer's cleanup, or still being written
                    raise CorruptState(f"{where}: the newest head is empty")
                meta, state = decode_cas_head(data, where)
            except CorruptState:
                if attempt == _READ_RETRIES - 1:
                    raise
                time.sleep(
                    min(0.002 * (attempt + 1), 0.02)
                )  # a local "xb" file shows while written
                continue
            return version, meta, state
        raise CorruptState(f"{where}: the newest head kept vanishing or stayed unreadable")

    # ------------------------------------------------------------------ reads

    def history(
        self, kpath: str, ck: tuple[str, str, str], meta: dict[str, Any], where: str
    ) -> list[Msg]:
        segs: list[str] = meta["segs"]
        hit = self.cache.get(ck)
        msgs: tuple[Msg, ...] = ()
        start = 0
        if hit is not None and hit.gen == meta["gen"] and hit.size <= len(segs):
            msgs, start = hit.msgs, hit.size
        for name in segs[start:]:
            data = self.cat(f"{kpath}/g{meta['gen']}/{name}")
            if data is None:
                raise FileNotFoundError(name)
            msgs += tuple(decode_payloads(unframe(data, None, where), where))
        if len(msgs) != meta["count"]:
            raise CorruptState(
                f"{where}: {len(msgs)} messages where the head commits {meta['count']}"
            )
        self.cache.put(ck, Cached(meta["gen"], meta["count"], len(segs), msgs))
        return list(msgs)

    def get(self, user_id: str, session_id: str, key: str) -> Versioned:
        self.probe()
        where = f"user_id={user_id!r} session_id={session_id!r} key={key!r}"
        kpath = self.kpath(user_id, session_id, key)
        for _ in range(_RETRIES):
            internal, meta, state = self.latest(kpath, where)
            if meta is None or meta["deleted"]:
                return Versioned(None, 0)
            try:
                msgs = self.history(kpath, (user_id, session_id, key), meta, where)
            except FileNotFoundError:
                if self.newest(kpath) == internal:
                    raise CorruptState(f"{where}: a committed history segment is missing") from None
                continue  # a rewrite superseded this head: read again
            loaded = decode_loaded(state, msgs, (user_id, session_id, key))
            return Versioned(loaded, internal - meta["base"])
        raise CorruptState(f"{where}: the slot kept changing during the read")

    def exists(self, user_id: str, session_id: str, key: str) -> bool:
        self.probe()
        where = slot_name(user_id, session_id, key)
        _, meta, _ = self.latest(self.kpath(user_id, session_id, key), where)
        return meta is not None and not meta["deleted"]

    # ------------------------------------------------------------------ writes

    def save(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected: ExpectedVersion,
        key: str,
        fence: Fence | None,
    ) -> int:
        self.probe()
        where = f"user_id={user_id!r} session_id={session_id!r} key={key!r}"
        head_state = encode_head(state)
        history = state.context
        base = min(history.unchanged_prefix, len(history))
        tail = [encode_msg(m) for m in history[base:]]
        kpath = self.kpath(user_id, session_id, key)
        ck = (user_id, session_id, key)
        with self._lock:  # one attempt at a time in this process; processes race on "xb"
            for _ in range(_RETRIES):
                internal, meta, stored = self.latest(kpath, where)
                live = meta is not None and not meta["deleted"]
                current = internal - meta["base"] if live and meta is not None else 0
                epoch = 0 if meta is None else meta["epoch"]
                owner = None if meta is None else meta.get("owner")
                newer = False
                if fence is not None:  # (a head before any fence records epoch 0, no owner)
                    recorded = (
                        None if meta is None or (epoch, owner) == (0, None) else (epoch, owner)
                    )
                    newer = fence_is_newer(fence, recorded, where)
                if live:
                    check_writable(stored, ck, where)  # (UNCONDITIONAL too)
                if expected is not UNCONDITIONAL and expected != current:
                    raise VersionConflict(user_id, session_id, key, expected, current)
                old: dict[str, Any] = meta if live and meta is not None else {}
                segs: list[str] = old.get("segs", [])
                append = bool(old) and expected == current and 0 < base == old["count"]
                append = append and len(segs) < MAX_SEGMENTS
                gen: str = old["gen"] if append else secrets.token_hex(8)
                payloads = tail if append else [encode_msg(m) for m in history[:base]] + tail
                seg = f"{len(segs) if append else 0:06d}-{secrets.token_hex(8)}"
                new_segs = [*segs, seg] if append else [seg]
                count = (old["count"] if append else 0) + len(payloads)
                new_base: int = old["base"] if old else internal
                new_meta = {
                    "base": new_base,
                    "gen": gen,
                    "segs": new_segs,
                    "count": count,
                    "epoch": fence.epoch if newer and fence is not None else epoch,
                    "deleted": False,
                }
                if newer and fence is not None:
                    new_meta["owner"] = fence.owner
                elif owner is not None:
                    new_meta["owner"] = owner
                seg_path = f"{kpath}/g{gen}/{seg}"
                try:
                    self.create(seg_path, frame(payloads))
                except FileNotFoundError:  # a rewrite removed this generation: we lost
                    self.rm(seg_path)
                    if expected is UNCONDITIONAL:
                        continue
                    raise VersionConflict(user_id, session_id, key, expected, None) from None
                try:
                    self.create(
                        self.head_path(kpath, internal + 1), encode_cas_head(new_meta, head_state)
                    )
                except FileExistsError:
                    self.rm(seg_path)
                    if expected is UNCONDITIONAL:
                        continue
                    raise VersionConflict(user_id, session_id, key, expected, None) from None
                except BaseException:
                    self.rm(seg_path)
                    raise
                rewrote = old and old["gen"] != gen
                self._cleanup(kpath, internal + 1, old["gen"] if rewrote else None)
                if append:
                    hit = self.cache.get(ck)
                    if hit is not None and (hit.gen, hit.size) == (gen, len(segs)):
                        msgs = hit.msgs + tuple(decode_payloads(payloads, where))
                        self.cache.put(ck, Cached(gen, count, len(new_segs), msgs))
                history.mark_committed()
                return internal + 1 - new_base
        raise StoreUnavailable(f"{where}: too many concurrent writers, the save kept losing")

    def _cleanup(self, kpath: str, newest: int, superseded: str | None) -> None:
        """After committing ``newest``: empty the head two versions back, and remove the
        generation a rewrite or delete superseded.

        Head names are never freed (an emptied head keeps its name), so a writer that read an
        old head can never win an exclusive create of a name that existed before: a create
        that succeeds is always the true successor. A writer killed between its commit and
        this cleanup leaves one full head and one old generation behind (a leak, never a
        wrong read). Nothing a newer head names is ever removed: a writer that read an older
        head fails its create.
        """
        try:  # best effort: the save is already committed and must not fail now
            if newest > 2:
                old = self.head_path(kpath, newest - 2)
                if self.cat(old):
                    self.fs.pipe_file(old, b"")
            if superseded is not None:
                self.rm(f"{kpath}/g{superseded}")
        except OSError:
            pass  # e.g. a losing writer's segment landed in the generation meanwhile

    def delete_key(self, user_id: str, session_id: str, key: str) -> bool:
        """Create a tombstone head (ordered with every CAS), then remove the rest."""
        self.probe()
        kpath = self.kpath(user_id, session_id, key)
        with self._lock:
            for _ in range(_RETRIES):
                internal, meta, _ = self.latest(kpath, slot_name(user_id, session_id, key))
                if meta is None or meta["deleted"]:
                    return False
                tomb = {
                    "base": internal + 1,
                    "gen": meta["gen"],
                    "segs": [],
                    "count": 0,
                    "epoch": meta["epoch"],
                    "deleted": True,
                }
                if meta.get("owner") is not None:
                    tomb["owner"] = meta["owner"]
                try:
                    self.create(self.head_path(kpath, internal + 1), encode_cas_head(tomb, b""))
                except FileExistsError:
                    continue
                self._cleanup(kpath, internal + 1, meta["gen"])
                self.cache.drop(user_id, session_id, key)
                return True
        raise StoreUnavailable(f"{kpath}: too many concurrent writers, the delete kept losing")
