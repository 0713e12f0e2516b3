"""The session log on Redis: a ``hookagent.sessionlog.SessionLog`` for standalone, Cluster
and Sentinel (docs/stores/redis.md, "Session log on Redis").

Per session, six keys under the state store's hash tag ``{U:S}`` (keys.py, logscripts.py):
the head, the commits' bytes and records keyed by first seq, a sorted set of first seqs
(so a read fetches only the commits after a seq, by range), the batch index and the sealed
owners. Every decision runs in one Lua script, which answers with the head it saw; the
caller replays ``rules.plan_commit``/``plan_acquire`` on that head, so the errors and their
messages are the kernel's and a script that disagreed with the rules would fail loudly.
Leases are judged by the Redis server's clock (``TIME``) unless a ``clock`` is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hookagent.errors import (
    BatchConflict,
    CorruptState,
    LogCorrupt,
    LogFenced,
    SessionLogError,
    StalePrefix,
    StoreConfigurationError,
    StoreUnavailable,
)
from hookagent.sessionlog import (
    CHECKPOINT,
    CommitResult,
    LogEvent,
    LogHead,
    LogWriter,
    Row,
    SessionPage,
    batch_digest,
    decode_batch,
    rows_after,
)
from hookagent.sessionlog.rules import (
    check_after,
    check_batch_id,
    check_holds,
    check_lease,
    check_owner,
    check_session,
    check_writer,
    encode_commit,
    plan_acquire,
    plan_commit,
)
from hookagent.store.ids import encode_id, slot_name

from . import logscripts as ls
from .errors import retrying
from .index import LogIndex
from .keys import DEFAULT_PREFIX, KeyLayout
from .logwire import Packed, arg, wire_for
from .lua import Script, run_then_wait
from .options import check_replication

KEYS_KEPT = 4096
"""Sessions whose keys a log handle keeps made (all dropped at once when full)."""
MAX_EXACT = 2**53  # Lua's numbers are doubles: larger ints are never sent as numbers
_REFUSED = {"FENCED": LogFenced, "STALE": StalePrefix, "CONFLICT": BatchConflict}


def _s(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


def _b(value: Any) -> bytes:
    return bytes(value) if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")


def _int(value: Any, where: str) -> int:
    """A stored counter: absent is 0; anything but an integer in [0, 2**53) is damage."""
    if value is None:
        return 0
    text = _s(value)
    if not text.isdigit() or int(text) >= MAX_EXACT:
        raise LogCorrupt(f"{where}: the log head holds a damaged number {text[:40]!r}")
    return int(text)


def _head(raw: Sequence[Any], where: str) -> LogHead:
    """A head from (seq, epoch, owner, lease_until us, commit_id, checkpoint_seq)."""
    seq, epoch, owner, until, commit, checkpoint = raw
    return LogHead(
        _int(seq, where),
        _int(epoch, where),
        None if owner is None else _s(owner),
        _int(until, where) / 1e6,
        None if commit is None else _s(commit),
        _int(checkpoint, where),
    )


class RedisSessionLog:
    """A session log on any redis-py asyncio client (standalone, cluster, sentinel).

    ``replicas`` (0 = off): a commit is acknowledged only once that many replicas hold it
    (``WAIT`` in the commit's round trip; not on a cluster). ``clock``: leases by this
    clock (seconds) instead of the server's ``TIME`` (every handle must then share it).
    """

    locality = "shared"

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = DEFAULT_PREFIX,
        owns_client: bool = False,
        on_close: Sequence[Callable[[], Awaitable[Any]]] = (),
        atomic_index: bool | None = None,
        replicas: int = 0,
        replica_timeout: float = 1.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        from .store import _is_cluster

        self.wait_ms = check_replication(replicas, replica_timeout)
        if replicas and _is_cluster(client):
            raise StoreConfigurationError(
                "replicas (WAIT-acknowledged commits) is not supported on a cluster client: "
                "WAIT must run on the script's own connection, which redis-py's cluster "
                "client does not pin"
            )
        if clock is not None and not callable(clock):
            raise StoreConfigurationError(f"clock must be a callable or None, got {clock!r}")
        self.client, self.layout, self.replicas, self.clock = (
            client,
            KeyLayout(prefix),
            replicas,
            clock,
        )
        self.atomic_index = not _is_cluster(client) if atomic_index is None else atomic_index
        self._index = LogIndex(client, self.layout)
        self._key_cache: dict[tuple[str, str, bool], tuple[str, ...]] = {}
        self._wire = wire_for(client)
        self._packed: dict[tuple[str, int, str], Packed] = {}
        self._owns_client, self._on_close = owns_client, list(on_close)

    def __repr__(self) -> str:
        return f"RedisSessionLog(prefix={self.layout.prefix!r})"

    @property
    def prefix(self) -> str:
        return self.layout.prefix

    def another_handle(self) -> RedisSessionLog:
        """A second handle on the same client and prefix (another process has its own)."""
        return RedisSessionLog(
            self.client, prefix=self.prefix, atomic_index=self.atomic_index,
            replicas=self.replicas, replica_timeout=self.wait_ms / 1000, clock=self.clock,
        )  # fmt: skip

    # ------------------------------------------------------------------ plumbing

    def _keys(self, user_id: str, session_id: str, *, index: bool = False) -> list[str]:
        """The session's keys (and the user's log index), made once per session: encoding
        the ids and formatting seven keys was a few dozen us of each W1 operation."""
        slot = (user_id, session_id, index)
        made = self._key_cache.get(slot)
        if made is None:
            if len(self._key_cache) >= KEYS_KEPT:
                self._key_cache.clear()
            keys = self.layout.session(user_id, session_id).log_keys()
            if index and self.atomic_index:
                keys.append(self.layout.log_index(user_id))
            made = self._key_cache[slot] = tuple(keys)
        return list(made)

    def _pack(self, script: Script, keys: list[str]) -> Packed:
        """The script with these keys encoded once per session: a script takes one list
        of each length per session (the session's keys, from its head key on)."""
        slot = (script.sha, len(keys), keys[0])
        made = self._packed.get(slot)
        if made is None:
            if len(self._packed) >= KEYS_KEPT:
                self._packed.clear()
            made = self._packed[slot] = Packed(script, keys, [])
        return made

    def _now(self) -> str:
        """ARGV[1] of the scripts: '' = the server's TIME, else this clock in us."""
        return "" if self.clock is None else str(round(self.clock() * 1e6))

    async def _run(
        self, script: Script, keys: list[str], args: list[Any], what: str, where: str
    ) -> Any:
        answer, _ = await self._send(script, keys, args, what, where, wait=False)
        return answer

    async def _send(
        self, script: Script, keys: list[str], args: list[Any], what: str, where: str, *,
        wait: bool,
    ) -> tuple[Any, int]:  # fmt: skip
        """One script (re-sent once on a lost connection: every log script is safe to
        repeat); with ``wait`` and ``replicas``, WAIT rides the same round trip."""

        wire = self._wire
        if wire is not None and not (wait and self.replicas):
            packed = self._pack(script, keys)
            tail = [arg(a) for a in args]

            async def send() -> tuple[Any, int]:
                return await wire.run(packed, tail), 0

        else:

            async def send() -> tuple[Any, int]:
                if wait and self.replicas:
                    return await run_then_wait(
                        script, self.client, keys, args, self.replicas, self.wait_ms
                    )
                return await script.run(self.client, keys, args), 0

        try:
            (answer, acked), _ = await retrying(send, f"{what} on {where}")
        except LogCorrupt:
            raise
        except CorruptState as exc:  # WRONGTYPE: one of the log's keys holds another type
            raise LogCorrupt(f"{where}: {exc}") from exc
        if isinstance(answer, list) and answer and _s(answer[0]) == "CORRUPT":
            part = _s(answer[1]) if len(answer) > 1 else "head"
            raise LogCorrupt(f"{where}: the log's {part} holds a damaged value; nothing written")
        return answer, acked

    # ------------------------------------------------------------------ lease

    async def head(self, user_id: str, session_id: str) -> LogHead:
        check_session(user_id, session_id)
        where = slot_name(user_id, session_id, "log")
        key = self._keys(user_id, session_id)[0]
        raw, _ = await retrying(
            lambda: self.client.hmget(key, "s", "e", "o", "u", "c", "k"), f"head of {where}"
        )
        return _head(raw, where)

    async def acquire(
        self, user_id: str, session_id: str, owner: str, lease_seconds: float
    ) -> LogWriter:
        check_session(user_id, session_id)
        check_owner(owner)
        lease = check_lease(lease_seconds)
        where = slot_name(user_id, session_id, "log")
        args = [self._now(), owner, max(1, round(lease * 1e6))]
        res = await self._run(ls.ACQUIRE, self._keys(user_id, session_id), args, "acquire", where)
        status, now, head = _s(res[0]), int(res[1]) / 1e6, _head(res[2:8], where)
        if status == "OK":
            return LogWriter(user_id, session_id, owner, head.epoch, head.lease_until, head.seq)
        plan_acquire(head, user_id, session_id, owner, now, lease, sealed=status == "SEALED")
        raise _disagree(where, "acquire", status)

    async def renew(self, writer: LogWriter, lease_seconds: float) -> LogWriter:
        check_writer(writer)
        lease = check_lease(lease_seconds)
        where = slot_name(writer.user_id, writer.session_id, "log")
        args = [self._now(), str(writer.epoch), writer.owner, max(1, round(lease * 1e6))]
        keys = self._keys(writer.user_id, writer.session_id)
        res = await self._run(ls.RENEW, keys, args, "renew", where)
        status, now, head = _s(res[0]), int(res[1]) / 1e6, _head(res[2:8], where)
        if status == "OK":
            return LogWriter(
                writer.user_id, writer.session_id, writer.owner, writer.epoch,
                head.lease_until, writer.seq,
            )  # fmt: skip
        check_holds(head, writer, now, "renew")
        raise _disagree(where, "renew", status)

    async def release(self, writer: LogWriter) -> bool:
        check_writer(writer)
        where = slot_name(writer.user_id, writer.session_id, "log")
        keys = self._keys(writer.user_id, writer.session_id)
        res = await self._run(ls.RELEASE, keys, [str(writer.epoch), writer.owner], "release", where)
        if int(res) < 0:
            raise LogCorrupt(f"{where}: the log head holds a damaged value; nothing written")
        return int(res) == 1

    async def seal(self, user_id: str, session_id: str, owner: str) -> None:
        check_session(user_id, session_id)
        check_owner(owner)
        where = slot_name(user_id, session_id, "log")
        keys = self._keys(user_id, session_id)
        res = await self._run(ls.SEAL, [keys[0], keys[5]], [owner], "seal", where)
        if int(res) < 0:
            raise LogCorrupt(f"{where}: the log head holds a damaged value; nothing written")

    async def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool:
        check_session(user_id, session_id)
        check_owner(owner)
        key = self._keys(user_id, session_id)[5]
        found, _ = await retrying(lambda: self.client.sismember(key, owner), "is_sealed")
        return bool(found)

    # ------------------------------------------------------------------ commit, read

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
        data, digest = encode_commit(events)
        user_id, session_id = writer.user_id, writer.session_id
        where = slot_name(user_id, session_id, "log")
        checkpoint = next(
            (i + 1 for i in range(len(events) - 1, -1, -1) if events[i].type == CHECKPOINT), 0
        )
        exact = type(expected_seq) is int and 0 <= expected_seq < MAX_EXACT
        create = exact and expected_seq == 0 and not self.atomic_index
        if create:  # cluster: the index first, so a crash leaves at most a stale entry
            await self._index._index_add(user_id, session_id)
        args = [
            self._now(), str(writer.epoch), writer.owner, batch_id,
            expected_seq if exact else -1, digest, len(events), checkpoint, int(bool(finish)),
            int(self.replicas > 0), encode_id(session_id), data,
        ]  # fmt: skip
        keys = self._keys(user_id, session_id, index=True)
        res, acked = await self._send(ls.COMMIT, keys, args, "commit", where, wait=True)
        status, now = _s(res[0]), int(res[1]) / 1e6
        prior = (int(res[2]), int(res[3]), _s(res[4])) if int(res[2]) else None
        if create and status != "OK":
            await self._index._index_remove_checked(user_id, session_id)
        seen = _head(res[5:11], where)
        try:  # the kernel's decision on what the script saw: the same errors as every backend
            plan = plan_commit(
                seen, writer, batch_id, expected_seq, events, data, digest, now,
                prior=prior, finish=bool(finish),
            )  # fmt: skip
        except (LogFenced, StalePrefix, BatchConflict) as exc:
            if not isinstance(exc, _REFUSED.get(status, ())):
                raise _disagree(where, "commit", status) from exc
            raise
        if status == "DUP" and plan.result is not None:
            result = plan.result
        elif status == "OK" and plan.result is None:
            head = _head(res[11:17], where)
            if head != plan.head:
                raise _disagree(where, "commit", status)
            if create:  # repairs a racing delete's index clean-up
                await self._index._index_add(user_id, session_id)
            result = CommitResult(plan.first_seq, plan.last_seq, head)
        else:
            raise _disagree(where, "commit", status)
        if self.replicas and acked < self.replicas:
            raise StoreUnavailable(
                f"{where}: the commit of batch {batch_id!r} reached {acked} of {self.replicas} "
                f"replicas within {self.wait_ms} ms; it is applied on the primary but not "
                "acknowledged (retry the same batch: a duplicate answer confirms it)"
            )
        return result

    async def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None = None
    ) -> list[LogEvent]:
        check_session(user_id, session_id)
        check_after(seq, limit)
        where = slot_name(user_id, session_id, "log")
        after = min(seq, MAX_EXACT)
        most = -1 if limit is None else min(limit, MAX_EXACT)  # each commit holds >= 1 event
        keys = self._keys(user_id, session_id)[:4]
        res = await self._run(ls.READ, keys, [after, most], "read", where)
        head, n = _head(res[1:7], where).seq, int(res[7])
        firsts, records, blobs = res[8 : 8 + n], res[8 + n : 8 + 2 * n], res[8 + 2 * n : 8 + 3 * n]
        out: list[LogEvent] = []
        expect = seq + 1
        for i, (f, record, blob) in enumerate(zip(firsts, records, blobs, strict=True)):
            first = int(f)
            if i == 0 and first < expect:
                expect = first  # the commit holding seq + 1 starts before it
            if first != expect:
                raise LogCorrupt(f"{where}: seqs {expect}..{first - 1} are missing")
            if blob is None or record is None:
                raise LogCorrupt(f"{where}: the commit at seq {first} is missing")
            events = decode_batch(_b(blob), first, where=where)
            last, digest = (*_s(record).split(" ", 2), "")[:2]  # a damaged one: "" mismatches
            if last != str(first + len(events) - 1) or digest != batch_digest(_b(blob)):
                raise LogCorrupt(f"{where}: the commit at seq {first} does not match its record")
            expect = first + len(events)
            for e in events:
                if seq < e.seq <= head:
                    out.append(e)
                    if limit is not None and len(out) >= limit:
                        return out
        short = limit is None or len(out) < limit
        if short and head > seq and (not out or out[-1].seq != head):
            raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
        return out

    async def read_rows_after(self, user_id: str, session_id: str, seq: int) -> list[Row]:
        """``read_after(seq)`` as ``Row`` tuples, the same one script and the same checks
        (a cold projection's fast path: no envelope objects)."""
        check_session(user_id, session_id)
        check_after(seq, None)
        where = slot_name(user_id, session_id, "log")
        keys = self._keys(user_id, session_id)[:4]
        res = await self._run(ls.READ, keys, [min(seq, MAX_EXACT), -1], "read", where)
        head, n = _head(res[1:7], where).seq, int(res[7])
        commits: list[tuple[int, int, bytes]] = []
        add = commits.append  # a cold read's loop: 4,000 commits, no call it can spare
        for f, record, blob in zip(
            res[8 : 8 + n], res[8 + n : 8 + 2 * n], res[8 + 2 * n : 8 + 3 * n], strict=True
        ):
            if type(blob) is not bytes or type(record) is not bytes:
                if blob is None or record is None:
                    raise LogCorrupt(f"{where}: the commit at seq {_s(f)} is missing")
                blob, record = _b(blob), _b(record)  # a client that decodes its replies
            last, digest = (*record.split(b" ", 2), b"")[:2]
            if not last.isdigit() or digest.decode("latin-1") != batch_digest(blob):
                raise LogCorrupt(f"{where}: the commit at seq {_s(f)} does not match its record")
            add((int(f), int(last), blob))
        return rows_after(commits, seq, head, where=where)

    async def read_commits_after(
        self, user_id: str, session_id: str, seqs: Sequence[int]
    ) -> tuple[int, list[tuple[int, int, bytes] | None]]:
        """``read_after(seq, 1)`` undecoded for each seq (``point_read`` decodes one): the
        head's seq and the commit holding ``seq + 1``, in one script (``READ_AT``), with
        ``read_after``'s record check."""
        check_session(user_id, session_id)
        for seq in seqs:
            check_after(seq, 1)
        where = slot_name(user_id, session_id, "log")
        keys = self._keys(user_id, session_id)[:4]
        args = [min(seq, MAX_EXACT) for seq in seqs]
        res = await self._run(ls.READ_AT, keys, args, "read", where)
        head, n = _head(res[1:7], where).seq, int(res[7])
        if n != len(seqs) or len(res) != 8 + 3 * n:
            raise LogCorrupt(f"{where}: the log's read answered {n} seqs for {len(seqs)}")
        out: list[tuple[int, int, bytes] | None] = []
        for i in range(8, 8 + 3 * n, 3):
            f, record, blob = res[i], res[i + 1], res[i + 2]
            if f is None:
                out.append(None)
                continue
            if blob is None or record is None:
                raise LogCorrupt(f"{where}: the commit at seq {_s(f)} is missing")
            blob = _b(blob)
            last, digest = (*_s(record).split(" ", 2), "")[:2]
            if not last.isdigit() or digest != batch_digest(blob):
                raise LogCorrupt(f"{where}: the commit at seq {_s(f)} does not match its record")
            out.append((int(f), int(last), blob))
        return head, out

    # ------------------------------------------------------------------ listing, delete

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        page = await self._index.list_session_ids(user_id, limit=limit, cursor=cursor)
        return SessionPage(page.session_ids, page.next_cursor)

    async def delete(self, user_id: str, session_id: str) -> bool:
        check_session(user_id, session_id)
        where = slot_name(user_id, session_id, "log")
        keys = self._keys(user_id, session_id, index=True)
        existed = int(await self._run(ls.DELETE, keys, [encode_id(session_id)], "delete", where))
        if not self.atomic_index:  # data first, index after (see the state store)
            await self._index._index_remove_checked(user_id, session_id)
        return existed > 0

    async def aclose(self) -> None:
        if self._wire is not None:
            await self._wire.aclose()
        if self._owns_client:
            await retrying(self.client.aclose, "close", 0)
            for close in self._on_close:
                await retrying(close, "close", 0)


def _disagree(where: str, what: str, status: str) -> SessionLogError:
    return SessionLogError(
        f"{where}: the Redis {what} script answered {status!r}, which hookagent.sessionlog's "
        "rules do not reach on the head it returned (a bug: report it)"
    )


LOG_OPTIONS = ("prefix", "replicas", "replica_timeout")


def connect_log(url: str, **options: Any) -> RedisSessionLog:
    """A session log (and its client, owned by it) from a state store URL; options:
    ``prefix``, ``replicas``, ``replica_timeout``, ``client_options``, ``clock``."""
    from .urls import open_client

    clock = options.pop("clock", None)
    client, on_close, kw = open_client(url, options, LOG_OPTIONS)
    return RedisSessionLog(client, owns_client=True, on_close=on_close, clock=clock, **kw)
