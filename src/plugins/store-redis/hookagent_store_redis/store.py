"""The Redis state store: Lua compare-and-set, append-only history, one round trip per call.

Layout (see keys.py): per (user, session, key) a head hash and a message list; per session a
key set (the session exists iff it exists) and a meta hash of counters that outlive delete;
per user a sorted-set index of session ids. A save is one EVALSHA that checks the fence and
the version and then appends only the new messages (RPUSH) or rewrites the list on a changed
prefix. A warm load is one EVALSHA returning the head plus only the messages after the cached
count. Outside a cluster the scripts update the per-user index in the same atomic step. In a
cluster the index lives in another slot: it is written BEFORE a session is created and
cleaned AFTER one is deleted (with a re-check), so a crash leaves at most a stale index
entry, which listing skips and removes, never a session missing from the index.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from hookagent.codec import encode_head, encode_msg
from hookagent.errors import (
    CorruptState,
    Fenced,
    StoreConfigurationError,
    StoreUnavailable,
    VersionConflict,
)
from hookagent.state import SCHEMA_VERSION, AgentState
from hookagent.store.base import (
    AGENT_STATE_KEY,
    UNCONDITIONAL,
    ExpectedVersion,
    Fence,
    Versioned,
)
from hookagent.store.ids import (
    check_expected_version,
    check_fence,
    check_loaded_slot,
    check_schema_writable,
    check_slot,
    check_state_slot,
    encode_id,
    slot_name,
)

from . import lua
from .cache import CachedHistory, Lru, Seen, Slot, chain
from .damage import damaged as _damaged
from .damage import decoded as _decoded
from .errors import VersionRegression, retrying, translated
from .index import SessionIndex, decode_member
from .keys import DEFAULT_PREFIX, KeyLayout, SessionKeys
from .logwire import Packed, arg, wire_for
from .options import check_options, check_replication

_SAVE, _LOAD, _DELETE = lua.Script(lua.SAVE), lua.Script(lua.LOAD), lua.Script(lua.DELETE)
RETRIES = 1
SLOTS_KEPT = 4096
"""Slots whose key names and packed scripts an instance keeps (then it starts over)."""
T = TypeVar("T")


class _SlotNames:
    """One slot's names and its scripts' fixed bytes, made once per slot: a warm call
    formatted six keys, encoded three ids and packed the keys of two scripts each time."""

    __slots__ = ("kname", "load", "load_keys", "load_what", "save", "save_keys", "save_what",
                 "session", "sid", "where")  # fmt: skip

    def __init__(self, layout: KeyLayout, slot: Slot, atomic_index: bool) -> None:
        user_id, session_id, key = slot
        self.where = slot_name(user_id, session_id, key)
        self.load_what, self.save_what = f"load of {self.where}", f"save on {self.where}"
        self.session: SessionKeys = layout.session(user_id, session_id)
        self.kname, self.sid = encode_id(key), encode_id(session_id)
        sk, kname = self.session, self.kname
        self.load_keys = [sk.head(kname), sk.messages(kname), sk.keyset, sk.meta]
        self.save_keys = [*self.load_keys]
        if atomic_index:
            self.save_keys.append(layout.user_index(user_id))
        self.load, self.save = Packed(_LOAD, self.load_keys, []), Packed(_SAVE, self.save_keys, [])


def _s(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


def _b(value: Any) -> bytes:
    return bytes(value) if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")


class RedisAgentStateStore(SessionIndex):
    """An ``AgentStateStore`` on any redis-py asyncio client (standalone, cluster, sentinel).

    ``ttl`` (seconds, default None = keep forever) expires a slot that nobody saved or loaded
    for that long (sliding). ``cache_slots`` bounds the per-slot message cache (0 = none),
    ``seen_slots`` the memory of versions seen. Bad values: ``StoreConfigurationError``.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl: float | None = None,
        cache_slots: int = 256,
        seen_slots: int = 100_000,
        owns_client: bool = False,
        on_close: Sequence[Callable[[], Awaitable[Any]]] = (),
        atomic_index: bool | None = None,
        replicas: int = 0,
        replica_timeout: float = 1.0,
    ) -> None:
        self.ttl_ms = check_options(ttl, cache_slots, seen_slots)
        self.wait_ms = check_replication(replicas, replica_timeout)
        if replicas and _is_cluster(client):
            raise StoreConfigurationError(
                "replicas (WAIT-acknowledged saves) is not supported on a cluster client: "
                "WAIT must run on the save script's own connection, which redis-py's cluster "
                "client does not pin"
            )
        self.replicas = replicas
        self.client = client
        self.layout = KeyLayout(prefix)
        self._cache: Lru[Slot, CachedHistory] = Lru(cache_slots)
        self._seen: Lru[Slot, Seen] = Lru(seen_slots)
        self._owns_client = owns_client
        # one node holds every key: the scripts may keep the index in the same atomic step
        self.atomic_index = not _is_cluster(client) if atomic_index is None else atomic_index
        self._on_close = list(on_close)
        # standalone and Sentinel: the load and save scripts on held connections (logwire).
        # Only on a client of its own: held connections stay checked out of the pool until
        # aclose, so a store dropped unclosed over a shared client would leak them
        self._wire = wire_for(client) if owns_client else None
        self._names: dict[Slot, _SlotNames] = {}

    def _slot(self, slot: Slot) -> _SlotNames:
        names = self._names.get(slot)
        if names is None:
            if len(self._names) >= SLOTS_KEPT:
                self._names.clear()
            names = self._names[slot] = _SlotNames(self.layout, slot, self.atomic_index)
        return names

    def __repr__(self) -> str:
        return f"RedisAgentStateStore(prefix={self.layout.prefix!r}, ttl_ms={self.ttl_ms})"

    @property
    def prefix(self) -> str:
        return self.layout.prefix

    async def _run(self, script: lua.Script, keys: list[str], args: list[Any], what: str) -> Any:
        return (await self._run_tracked(script, keys, args, what))[0]

    async def _run_tracked(
        self, script: lua.Script, keys: list[str], args: list[Any], what: str
    ) -> tuple[Any, bool]:
        """Run a script; a lost connection (killed client, failover) is retried once.

        Every script is safe to repeat: loads and deletes are idempotent, a save carries a
        write id that makes a replay of an applied save a no-op. Returns (answer, re-sent?):
        a re-sent save cannot trust a conflict answer (see ``save_if_version``).
        """
        return await self._retrying(lambda: script.run(self.client, keys, args), what)

    async def _retrying(self, send: Callable[[], Awaitable[T]], what: str) -> tuple[T, bool]:
        return await retrying(send, what, RETRIES)

    async def _script(
        self, script: lua.Script, packed: Packed, keys: list[str], args: list[Any], what: str
    ) -> tuple[Any, bool]:
        """A load or save script (retried as ``_run_tracked`` says): on a held connection
        with its keys packed once when the client allows it, else through redis-py."""
        wire = self._wire
        if wire is not None:
            tail = [arg(a) for a in args]
            return await retrying(lambda: wire.run(packed, tail), what, RETRIES)
        return await retrying(lambda: script.run(self.client, keys, args), what, RETRIES)

    # ------------------------------------------------------------------ load

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        return await self._load(user_id, session_id, key, use_cache=True)

    async def _load(
        self, user_id: str, session_id: str, key: str, *, use_cache: bool, atomic: bool = False
    ) -> Versioned:
        """One slot: the head by script, then only the messages this instance lacks.

        With nothing cached, the head comes first and the list is read by a plain LRANGE; a
        list that no longer matches the head's hash chain (a concurrent rewrite) is read
        again in one atomic script (``atomic=True``). The script also tells whether the
        write this instance last saw is still in the slot's lineage.
        """
        slot: Slot = (user_id, session_id, key)
        names = self._slot(slot)
        where, sk, kname = names.where, names.session, names.kname
        cached = self._cache.get(slot) if use_cache else None
        seen = self._seen.get(slot)  # what was seen BEFORE this request: it must still show
        if cached is not None:
            args: list[Any] = [cached.generation, cached.length]
        else:
            args = [-1, 0] if atomic else ["head", 0]
        res, _ = await self._script(
            _LOAD,
            names.load,
            names.load_keys,
            [*args, self.ttl_ms, kname, *_seen_args(seen), cached.write_id if cached else ""],
            names.load_what,
        )
        version, counter = int(res[0]), int(res[1])
        if version < 0:
            raise _damaged(_s(res[2]), res[3:], where, written=True)
        if version == 0:
            self._cache.pop(slot)
            self._seen.pop(slot)
            if seen is not None and counter < seen.incarnation:
                raise VersionRegression(user_id, session_id, key, seen.order, (counter, 0))
            return Versioned(None, 0)
        gen, count, head_chain = int(res[2]), int(res[3]), _s(res[4])
        incarnation, write_id, sections, start = int(res[5]), _s(res[6]), res[7], int(res[8])
        joined, lineage = _b(res[9]), _s(res[10])
        sections = _b(sections)
        if not sections:  # the script found the cached head unchanged (it never stores b"")
            if cached is None or cached.write_id != write_id or not cached.sections:
                raise CorruptState(f"the load script sent no sections for {where}")
            sections = cached.sections
        raw = joined.split(b"\n") if joined else []
        if seen is not None and lineage != "ok":
            self._cache.pop(slot)
            self._seen.put(slot, Seen(incarnation, version, write_id))  # reported once
            raise VersionRegression(
                user_id, session_id, key, seen.order, (incarnation, version), lineage
            )
        prefix: CachedHistory | None = None
        if cached is None and not atomic:
            assert start == count and not raw
            if count:
                listed, _ = await self._retrying(
                    lambda: self.client.lrange(sk.messages(kname), 0, count - 1),
                    f"load of {where}",
                )
                # one reply holds one type: bytes, or str with decode_responses=True
                raw = (
                    [_b(item) for item in listed]
                    if listed and type(listed[0]) is not bytes
                    else listed
                )
            if len(raw) != count or chain("", raw) != head_chain:  # rewritten meanwhile
                return await self._load(user_id, session_id, key, use_cache=False, atomic=True)
        elif start > 0:
            assert cached is not None and start == cached.length
            if chain(cached.chain, raw) != head_chain:  # the cached prefix was replaced
                self._cache.pop(slot)
                return await self._load(user_id, session_id, key, use_cache=False)
            prefix = cached
        elif chain("", raw) != head_chain:
            raise CorruptState(f"the message list of {where} does not match its head's hash chain")
        log, state = _decoded(where, sections, raw, prefix, start if prefix is not None else 0)
        if len(state.context) != count:
            raise CorruptState(
                f"{where} is damaged: its head says {count} messages, the list holds "
                f"{len(state.context)}"
            )
        check_loaded_slot(state, user_id, session_id, key)
        self._cache.put(slot, CachedHistory(gen, head_chain, log, count, write_id, sections))
        self._seen.put(slot, Seen(incarnation, version, write_id))
        return Versioned(state, version)

    # ------------------------------------------------------------------ save

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
        check_expected_version(expected_version)
        check_fence(fence)  # epochs below 2**53: exact in Lua's doubles
        expected = -1 if expected_version is UNCONDITIONAL else int(expected_version)
        # validate and encode everything before anything is written
        sections = encode_head(state)
        history = state.context
        base = history.unchanged_prefix
        append = expected > 0 and base > 0
        payload = [encode_msg(m) for m in (history[base:] if append else history)]
        slot: Slot = (user_id, session_id, key)
        names = self._slot(slot)
        where, kname, keys = names.where, names.kname, names.save_keys
        seen = self._seen.get(slot)
        write_id = secrets.token_hex(8)
        ordered_index = expected <= 0 and not self.atomic_index
        if ordered_index:  # index first: a crash after this leaves only a stale entry
            await self._index_add(user_id, session_id)
        fixed = [
            "" if fence is None else fence.epoch,
            "" if fence is None else fence.owner,
            sections,
            self.ttl_ms,
            kname,
            write_id,
            *_seen_args(seen),
            names.sid,
            SCHEMA_VERSION,
            user_id,
            session_id,
        ]

        async def attempt(mode: str, messages: list[bytes]) -> tuple[Any, bool]:
            args = [expected, mode, base if mode == "a" else 0, *fixed, *messages]
            if self.replicas:  # WAIT rides the script's connection: redis-py's pipeline
                return await self._retrying(lambda: self._send_save(keys, args), names.save_what)
            res, resent = await self._script(_SAVE, names.save, keys, args, names.save_what)
            return (res, 0), resent

        (res, acked), resent = await attempt("a" if append else "r", payload)
        status = _s(res[0])
        if status == "REWRITE":  # the stored history is shorter than the unchanged prefix
            (res, acked), resent = await attempt("r", [encode_msg(m) for m in history])
            status = _s(res[0])
            append = False
        if status != "OK" and ordered_index:  # nothing written: drop a create's entry
            await self._index_remove_checked(user_id, session_id)
        if status in ("CONFLICT", "FENCED") and resent:
            # re-sent after a lost connection: the first send may have been applied and then
            # overwritten by another writer, so a conflict here does not prove ours failed
            raise StoreUnavailable(
                f"connection lost during a save on {where}; the outcome is unknown (reload)"
            )
        if status == "FENCED":
            holder = fence.owner if fence is not None else None
            raise Fenced(
                f"lease epoch {fence.epoch if fence else None} of {holder!r} is older than the "
                f"newest (gate epoch {int(res[1])}, last write epoch {int(res[2])}) on {where}"
            )
        if status == "CORRUPT":  # the script wrote nothing; the next load reads it all
            self._cache.pop(slot)
            raise _damaged(_s(res[1]), res[2:], where, written=False)
        if status == "SCHEMA":
            check_schema_writable(int(res[1]), user_id, session_id, key)
        if status == "LOST" and seen is not None:
            self._cache.pop(slot)
            self._seen.pop(slot)  # reported once: the next call starts from the server
            raise VersionRegression(
                user_id, session_id, key, seen.order, (int(res[2]), int(res[1])), _s(res[3])
            )
        if status == "CONFLICT":
            raise VersionConflict(user_id, session_id, key, expected, int(res[1]))
        if status != "OK":
            raise CorruptState(f"unexpected answer {status!r} from the save script on {where}")
        version, gen, count, head_chain = int(res[1]), int(res[2]), int(res[3]), _s(res[4])
        incarnation, created, replayed = int(res[5]), int(res[6]), int(res[7])
        if created and ordered_index:  # repairs a racing delete's clean-up that ran before us
            await self._index_add(user_id, session_id)
        if self.replicas and (acked < self.replicas or (resent and replayed)):
            # applied on the primary, not known to be on enough replicas: a failover may
            # still lose it, so it is not acknowledged (a replay's WAIT proves nothing: it
            # ran on a new connection that wrote nothing)
            self._cache.pop(slot)
            raise StoreUnavailable(
                f"the save on {where} reached {acked} of {self.replicas} replicas within "
                f"{self.wait_ms} ms; the outcome is unknown (reload)"
            )
        if count == len(history):
            old = self._cache.get(slot)
            log = (
                old.extended(base, history[base:])  # what the call added: O(new)
                if old is not None and append and old.generation == gen  # same list, appended
                else list(history)
            )
            self._cache.put(slot, CachedHistory(gen, head_chain, log, count, write_id, sections))
        else:
            self._cache.pop(slot)
        self._seen.put(slot, Seen(incarnation, version, write_id))
        history.mark_committed()
        return version

    async def _send_save(self, keys: list[str], args: list[Any]) -> tuple[Any, int]:
        """The save script; with ``replicas``, followed by WAIT in the same round trip."""
        if not self.replicas:
            return await _SAVE.run(self.client, keys, args), 0
        return await lua.run_then_wait(_SAVE, self.client, keys, args, self.replicas, self.wait_ms)

    # ------------------------------------------------------------------ delete, exists

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        sk = self.layout.session(user_id, session_id)
        keys = [sk.keyset]
        if self.atomic_index:
            keys.append(self.layout.user_index(user_id))
        args = [sk.base, "" if key is None else encode_id(key), encode_id(session_id)]
        res = await self._run(_DELETE, keys, args, "delete")
        existed, remaining = int(res[0]) > 0, int(res[1])
        for name in {decode_member(_s(n)) for n in res[2:]} | ({key} if key else set()):
            self._cache.pop((user_id, session_id, name))
            self._seen.pop((user_id, session_id, name))
        if not remaining and not self.atomic_index:  # data first, index after (see above)
            await self._index_remove_checked(user_id, session_id)
        return existed

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)
        head = self.layout.session(user_id, session_id).head(encode_id(key))
        with translated("exists"):
            return bool(await self.client.exists(head))

    # ------------------------------------------------------------------ misc

    def forget(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> None:
        """Drop what this instance remembers of a slot (cache and highest version seen)."""
        self._cache.pop((user_id, session_id, key))
        self._seen.pop((user_id, session_id, key))

    async def aclose(self) -> None:
        try:
            if self._wire is not None:  # the held connections go back to the pool
                with translated("close"):
                    await self._wire.aclose()
        finally:  # the client (and a Sentinel's sockets) are closed whatever happened above
            if self._owns_client:
                with translated("close"):
                    await self.client.aclose()
                for close in self._on_close:
                    with translated("close"):
                        await close()


def _seen_args(seen: Seen | None) -> list[Any]:
    """What a script needs to check that the write last seen is still in the lineage."""
    return ["", "", ""] if seen is None else [seen.incarnation, seen.version, seen.write_id]


def _is_cluster(client: Any) -> bool:
    from redis.asyncio.cluster import RedisCluster

    return isinstance(client, RedisCluster)
