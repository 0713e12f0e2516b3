"""The log as the state's authority: an ``AgentStateStore`` whose loads are projections.

The kernel loads and saves through this store alone when ``AgentConfig(session_log=...)``
is set (``hookagent_state_authority``). A load reads the head and, when this process's
projection is behind, only the events after it (a cold load: the newest checkpoint and the
facts since the history's base). A run's final save is the recording's last flush
(``finish=True``: the lease ends and the run_id is sealed in the same commit). Any other
save is an admin change with a writer of its own: refused while a run holds the lease, and
refused (``VersionConflict``) when the state was read at an older seq than the head's.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from typing import Any

import anyio
from hookagent import AgentState, loading_run_context
from hookagent.errors import LogCorrupt, OwnerSealed, StoreConfigurationError, VersionConflict
from hookagent.messages import new_id
from hookagent.sessionlog import (
    LogEvent,
    LogHead,
    LogWriter,
    SessionLog,
    open_session_log,
    point_read,
    session_log_registration,
)
from hookagent.store.base import (
    AGENT_STATE_KEY,
    UNCONDITIONAL,
    ExpectedVersion,
    Fence,
    SessionPage,
    Versioned,
)
from hookagent.store.ids import (
    check_cursor,
    check_loaded_slot,
    check_page_limit,
    check_slot,
    check_state_slot,
    slot_name,
)

from . import catalogue as c
from .errors import AdminRefused, RunAlreadyRecorded, UncertainToolCalls
from .heartbeat import HEARTBEAT
from .projection import Projection, gc_paused
from .recording import Recording
from .segments import SEGMENT_MESSAGES, Link, apply_segment, chain_of, later, start_of

ADMIN_LEASE = 30.0
LIVE: weakref.WeakValueDictionary[tuple[str, str, str | None], Recording] = (
    weakref.WeakValueDictionary()
)
"""Every store's live recordings by (user_id, session_id, run_id): a run's middlewares find
theirs with one lookup, four times a call (a store dropped with a run live leaves none)."""
PROJECTIONS_KEPT = 1024
"""Sessions whose projection a process keeps warm (least recently used dropped first)."""


class LogBackedStore:
    """A ``SessionLog`` seen as the ``AgentStateStore`` the kernel loads and saves with."""

    def __init__(
        self,
        spec: SessionLog | str,
        *,
        plugin_manager: Any = None,
        lease: float = 120.0,
        options: dict[str, Any] | None = None,
        durability: str = "dispatch",
        segment_messages: int = SEGMENT_MESSAGES,
    ) -> None:
        self._spec = spec
        self._pm = plugin_manager
        self._options = dict(options or {})
        self.lease = lease
        self.durability = durability
        self.segment_messages = segment_messages
        """K: a run's recorder cuts a history segment once this many messages follow the last."""
        self._log: SessionLog | None = None if isinstance(spec, str) else spec
        self._owns_log = isinstance(spec, str)
        if isinstance(spec, str):
            self.locality = session_log_registration(plugin_manager, spec)[2]
        elif isinstance(spec, SessionLog):
            self.locality = getattr(spec, "locality", "shared")
        else:
            raise StoreConfigurationError(
                f"session_log is a URL or a hookagent.sessionlog.SessionLog, got {type(spec).__name__}"
            )
        self._projections: OrderedDict[tuple[str, str], Projection] = OrderedDict()
        self._loaded: dict[tuple[str, str], tuple[AgentState, int]] = {}
        self.recordings: dict[tuple[str, str], Recording] = {}
        """The live run's recording per slot (``attach`` and ``detach`` keep ``LIVE`` in step)."""
        self.acquired: dict[tuple[str, str], LogWriter] = {}
        """Writers a run's load took, until its ``state_loaded`` makes them a recording."""

    def __repr__(self) -> str:
        return f"LogBackedStore({self._spec!r})"

    async def log(self) -> SessionLog:
        if self._log is None:
            assert isinstance(self._spec, str)
            self._log = await open_session_log(self._spec, plugin_manager=self._pm, **self._options)
        return self._log

    # ------------------------------------------------------------------ projection
    async def project(
        self, user_id: str, session_id: str, head: LogHead | None = None
    ) -> Projection:
        """This process's projection of the session, brought up to the head."""
        log = await self.log()
        head = head or await log.head(user_id, session_id)
        key = (user_id, session_id)
        proj = self._projections.get(key)
        if proj is not None and (
            proj.seq > head.seq or (proj.seq == head.seq and proj.commit_id != head.commit_id)
        ):
            proj = None  # the log was deleted and written again meanwhile
        if proj is None or (proj.seq < head.seq and proj.seq == 0):
            proj = await self._cold(log, user_id, session_id, head)
        elif proj.seq < head.seq:
            proj.apply(await log.read_after(user_id, session_id, proj.seq))
        if proj.seq > head.seq:  # another writer committed after the head was read
            head = await log.head(user_id, session_id)
            if proj.seq < head.seq:
                proj.apply(await log.read_after(user_id, session_id, proj.seq))
        if proj.seq != head.seq:
            raise LogCorrupt(
                f"user_id={user_id!r} session_id={session_id!r}: the head is at seq {head.seq} "
                f"but the log reads only to {proj.seq}"
            )
        proj.commit_id = head.commit_id
        self._projections[key] = proj
        self._projections.move_to_end(key)
        while len(self._projections) > PROJECTIONS_KEPT:
            self._projections.popitem(last=False)
        return proj

    async def _cold(
        self, log: SessionLog, user_id: str, session_id: str, head: LogHead
    ) -> Projection:
        proj = Projection(user_id, session_id)
        start = 0
        if head.checkpoint_seq:
            found = await log.read_after(user_id, session_id, head.checkpoint_seq - 1, 1)
            if not found or found[0].seq != head.checkpoint_seq:
                raise LogCorrupt(
                    f"user_id={user_id!r} session_id={session_id!r}: the head names "
                    f"checkpoint {head.checkpoint_seq}, which the log does not hold"
                )
            base = found[0].payload.get("base", 0)
            base = base if type(base) is int and base > 0 else 0
            start = await self._segments(log, proj, found[0], base)
        rows = getattr(log, "read_rows_after", None)  # a backend's fast path, if it has one
        if rows is not None:
            got = await rows(user_id, session_id, start)
            with gc_paused():  # the objects of a whole history at once: no collection
                proj.apply_rows(got)
        else:
            events = await log.read_after(user_id, session_id, start)
            with gc_paused():
                proj.apply(events)
        return proj

    async def _segments(self, log: SessionLog, proj: Projection, cp: Any, base: int) -> int:
        """The history segments the newest checkpoint names, applied (``segments``): the
        seq after which the commits are still to be read."""
        try:
            chain = chain_of(cp.payload)
        except (TypeError, ValueError) as exc:
            raise LogCorrupt(
                f"user_id={proj.user_id!r} session_id={proj.session_id!r}: checkpoint "
                f"{cp.seq}: {exc}"
            ) from None
        if not chain:
            return start_of(base)
        if chain[-1][1] >= cp.seq:
            raise LogCorrupt(
                f"user_id={proj.user_id!r} session_id={proj.session_id!r}: checkpoint {cp.seq} "
                f"names a segment covering seq {chain[-1][1]}, past itself"
            )
        raw = getattr(log, "read_commits_after", None)  # a backend's fast path, if it has one
        if raw is not None:  # every segment read at once, then decoded in one pause
            afters = [link[0] - 1 for link in chain]
            head, commits = await raw(proj.user_id, proj.session_id, afters)
            where = slot_name(proj.user_id, proj.session_id, "log")
            with gc_paused():
                found = [
                    point_read(head, commit, after, where=where)
                    for commit, after in zip(commits, afters, strict=True)
                ]
                return self._apply_segments(proj, found, chain, base)
        found = [await log.read_after(proj.user_id, proj.session_id, k[0] - 1, 1) for k in chain]
        with gc_paused():
            return self._apply_segments(proj, found, chain, base)

    @staticmethod
    def _apply_segments(
        proj: Projection, found: list[list[LogEvent]], chain: list[Link], base: int
    ) -> int:
        read = []
        for got, link in zip(found, chain, strict=True):
            e = got[0] if got else None
            if e is not None and e.seq == link[0] and later(e):
                return start_of(base)  # a segment of a later version: read the commits
            read.append(e)
        proj.base, proj.covered_to = base, start_of(base)
        for e, link in zip(read, chain, strict=True):
            apply_segment(proj, e, link)
        proj.seq = proj.covered_to
        return proj.seq

    def attach(self, slot: tuple[str, str], rec: Recording) -> None:
        """``rec`` is the slot's live recording (what the run's middlewares find)."""
        old = self.recordings.get(slot)
        if old is not None:
            _unlive(slot, old)
        self.recordings[slot] = rec
        LIVE[(*slot, rec.run_id)] = rec

    def detach(self, slot: tuple[str, str]) -> Recording:
        """The slot's recording, no longer live."""
        rec = self.recordings.pop(slot)
        _unlive(slot, rec)
        return rec

    def warm(self, slot: tuple[str, str]) -> Projection | None:
        """The projection this process holds for ``slot`` (as of its last load or save)."""
        return self._projections.get(slot)

    # ------------------------------------------------------------------ AgentStateStore
    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        """The projected state at the head's seq. Loading for a run, the run's writer lease
        is taken in the same round trip (its seq is the head's): the run owns the session
        from the state it loads, and nobody can commit in between. A read while another
        run holds the lease sees that run's committed facts (its tools in flight are open
        calls, not uncertain ones: their run is alive)."""
        check_slot(user_id, session_id, key)
        _only_state(key)
        log = await self.log()
        slot = (user_id, session_id)
        run = loading_run_context()
        head: LogHead | None = None
        if run is not None and run.user_id == user_id and run.session_id in (None, session_id):
            writer = await self._acquire(log, slot, run.run_id)
            seq = writer.seq
        else:
            writer, head = None, await log.head(user_id, session_id)
            seq = head.seq
        try:
            if seq == 0:
                self._loaded.pop(slot, None)
                return Versioned(None, 0)
            proj = self._projections.get(slot)
            if proj is None or proj.seq != seq:
                proj = await self.project(user_id, session_id, head)
            uncertain = proj.uncertain()
            in_flight = (
                head is not None and head.owner is not None and head.lease_until > time.time()
            )
            if uncertain and not in_flight:  # a live writer's dispatches are running, not lost
                raise UncertainToolCalls(user_id, session_id, uncertain)
            state = check_loaded_slot(proj.state(), user_id, session_id, key)
        except BaseException:
            if writer is not None:
                self.acquired.pop(slot, None)
                with anyio.CancelScope(shield=True):
                    await log.release(writer)
            raise
        self._loaded[slot] = (state, seq)
        return Versioned(state, seq)

    async def _acquire(self, log: SessionLog, slot: tuple[str, str], run_id: str) -> LogWriter:
        try:
            writer = await log.acquire(*slot, run_id, self.lease)
        except OwnerSealed:
            raise RunAlreadyRecorded(
                f"run_id {run_id!r} is already recorded in session {slot[1]!r}: a run_id is "
                "used once"
            ) from None
        self.acquired[slot] = writer
        return writer

    def loaded_seq(self, state: AgentState) -> int | None:
        """The seq ``state`` was loaded (or last saved) at, if it is that very object."""
        got = self._loaded.get((state.user_id, state.session_id))
        return got[1] if got is not None and got[0] is state else None

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
        _only_state(key)
        check_state_slot(state, user_id, session_id, key)
        slot = (user_id, session_id)
        rec = self.recordings.get(slot)
        if rec is not None and rec.state is state and not rec.finished:
            if expected_version is not UNCONDITIONAL and expected_version != rec.loaded_seq:
                raise VersionConflict(user_id, session_id, key, expected_version, rec.seq)
            await rec.flush(state, self._end_events(rec, state), finish=True)
            self.detach(slot)
            HEARTBEAT.forget(rec)
            self._loaded[slot] = (state, rec.seq)
            return rec.seq
        return await self._admin_save(user_id, session_id, state, expected_version, key)

    def _end_events(self, rec: Recording, state: AgentState) -> list[Any]:
        outcome = rec.outcome or "success"
        out = []
        if outcome == "suspended" and state.turn_context.pending:
            ids = [p.tool_use_id for p in state.turn_context.pending]
            out.append(rec.fact("interaction/requested", {"ids": ids}))
        completed = outcome == "success" and not state.turn_context.suspended
        out.append(rec.fact(c.RUN_FINISHED, {"outcome": outcome, "completed": completed}))
        return out

    async def _admin_save(
        self, user_id: str, session_id: str, state: AgentState, expected: ExpectedVersion, key: str
    ) -> int:
        log = await self.log()
        head = await log.head(user_id, session_id)
        if expected is not UNCONDITIONAL and expected != head.seq:
            raise VersionConflict(user_id, session_id, key, expected, head.seq)
        proj = (
            await self.project(user_id, session_id, head)
            if head.seq
            else Projection(user_id, session_id)
        )
        uncertain = proj.uncertain()
        if uncertain:
            raise UncertainToolCalls(user_id, session_id, uncertain)
        writer = await log.acquire(user_id, session_id, f"admin-{new_id()}", ADMIN_LEASE)
        rec = Recording(
            log,
            writer,
            proj,
            ADMIN_LEASE,
            seq=writer.seq,
            flushed=len(proj.messages),
            segment_messages=self.segment_messages,
        )
        try:
            if writer.seq != head.seq:
                raise VersionConflict(user_id, session_id, key, head.seq, writer.seq)
            history = state.context
            if history.unchanged_prefix < rec.flushed and list(history) == proj.messages:
                history.mark_committed()  # a decoded copy of what the log holds
            changed = history.unchanged_prefix < rec.flushed or len(history) > rec.flushed
            turn = (proj.head_doc or {}).get("turn_context") or {}
            if changed and turn.get("pending"):
                raise AdminRefused(
                    f"user_id={user_id!r} session_id={session_id!r}: the history cannot change "
                    "while the suspended turn waits for answers (answer or supersede it first)"
                )
            reason = _admin_reason(state)
            extra = [rec.fact(c.ADMIN, {"reason": reason})]
            await rec.flush(state, extra, finish=True, reason=reason)
        except BaseException:
            if not rec.finished:
                await log.release(rec.writer)
            raise
        self._loaded[(user_id, session_id)] = (state, rec.seq)
        return rec.seq

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        self._projections.pop((user_id, session_id), None)
        self._loaded.pop((user_id, session_id), None)
        return await (await self.log()).delete(user_id, session_id)

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)
        return (
            key == AGENT_STATE_KEY and (await (await self.log()).head(user_id, session_id)).seq > 0
        )

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_page_limit(limit)
        check_cursor(cursor)
        page = await (await self.log()).list_session_ids(user_id, limit=limit, cursor=cursor)
        return SessionPage(page.session_ids, page.next_cursor)

    async def aclose(self) -> None:
        if self._owns_log and self._log is not None:
            await self._log.aclose()


def _unlive(slot: tuple[str, str], rec: Recording) -> None:
    key = (*slot, rec.run_id)
    if LIVE.get(key) is rec:
        del LIVE[key]


def _only_state(key: str) -> None:
    if key != AGENT_STATE_KEY:
        from hookagent.errors import InvalidStoreArgument

        raise InvalidStoreArgument(
            f"a session log holds the agent state only (key {AGENT_STATE_KEY!r}), not {key!r}"
        )


def _admin_reason(state: AgentState) -> str:
    log = state.extensions.get("admin_log")
    if isinstance(log, list) and log and isinstance(log[-1], dict):
        return str(log[-1].get("reason", "admin"))
    return "admin"
