"""The host's running machinery: commands in, views out, the sessions it knows and owns.

``Core`` exists while a ``SessionHost`` is entered. It records commands (``submit``),
answers views and waits, streams events, and keeps one ``Slot`` per known session; a
poller discovers other replicas' commands and takes the owner lease of sessions with
unfinished commands, and then a ``SessionDriver`` (driver.py) runs that session.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.abc import TaskGroup
from hookagent import RunEvent
from hookagent.messages import new_id
from hookagent.sessionlog import LogEvent, SessionLog
from hookagent.store.ids import check_id
from hookagent_session_log import LogBackedStore

from .errors import (
    CommandRejected,
    IdempotencyConflict,
    InvalidCommand,
    NotRunning,
    StaleRun,
    UnknownCommand,
    WaitTimeout,
)
from .fold import COMMAND, InboxState
from .inbox import Inbox, inbox_session
from .live import LiveRuns
from .model import (
    TaskView,
    check_key,
    command_id_for,
    digest,
    encode_answer,
    input_docs,
)

if TYPE_CHECKING:
    from .host import SessionHost
    from .session import AgentSession

log = logging.getLogger("hookagent.session")


@attrs.define(eq=False)
class Slot:
    """A session this host knows: its change signal and whether a driver runs it here."""

    user_id: str
    session_id: str
    driving: bool = False
    changed: anyio.Event = attrs.Factory(anyio.Event)
    wake: anyio.Event = attrs.Factory(anyio.Event)

    def notify(self) -> None:
        """Something changed (an append here, a run event): wake waiters and the driver."""
        self.changed.set()
        self.changed = anyio.Event()
        self.wake.set()


class Core:
    def __init__(self, host: SessionHost, log: SessionLog, *, owns_log: bool) -> None:
        self.host = host
        self.agent = host.agent
        self.inbox = Inbox(log, append_timeout=host.append_timeout)
        self._owns_log = owns_log
        self.live = LiveRuns()
        self.slots: dict[tuple[str, str], Slot] = {}
        self.limiter = anyio.CapacityLimiter(host.max_concurrent_runs)
        self.closing = False
        self._tg: TaskGroup | None = None
        self._discover = anyio.Event()
        self._idle = anyio.Event()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self.agent.__aenter__()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        if self.host.dispatch:
            self._tg.start_soon(self._poll)

    async def stop(self) -> None:
        """Stop claiming; running runs finish within the agent's shutdown timeout (then
        are interrupted and saved); owner leases are released."""
        self.closing = True
        for slot in self.slots.values():
            slot.notify()
        try:
            await self.agent.shutdown(self.agent.config.shutdown_timeout)
            with anyio.move_on_after(10):
                while any(s.driving for s in self.slots.values()):
                    self._idle = anyio.Event()
                    await self._idle.wait()
        finally:
            tg, self._tg = self._tg, None
            if tg is not None:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)
            await self.agent.__aexit__(None, None, None)
            if self._owns_log:
                await self.inbox.log.aclose()

    def owned(self) -> list[tuple[str, str]]:
        return sorted(k for k, s in self.slots.items() if s.driving)

    def wake_discovery(self) -> None:
        self._discover.set()

    def slot(self, user_id: str, session_id: str) -> Slot:
        key = (user_id, session_id)
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = Slot(user_id, session_id)
        return slot

    async def session_log(self) -> SessionLog:
        store = await self.agent.kernel.store()
        if not isinstance(store, LogBackedStore):
            raise InvalidCommand("the host's agent does not load its state from a session log")
        return await store.log()

    # ------------------------------------------------------------------ commands
    async def submit(
        self, session: AgentSession, kind: str, payload: dict[str, Any], key: str | None
    ) -> TaskView:
        u, s = session.user_id, session.session_id
        inbox_session(s)  # the id fits the inbox's prefix
        key = check_key(key) if key is not None else f"auto-{new_id()}"
        body = _payload(kind, payload)
        cid = command_id_for(u, s, key)
        dg = digest(kind, body)
        expected = body.get("expected_run_id")

        def decide(state: InboxState) -> list[LogEvent]:
            old = state.entries.get(cid)
            if old is not None:
                if old.key != key or old.digest != dg or old.kind != kind:
                    raise IdempotencyConflict(
                        f"user_id={u!r} session_id={s!r}: idempotency key {key!r} was used for "
                        f"a {old.kind} command with other content (command {cid}); resend the "
                        "same command or use a new key",
                        command_id=cid,
                        idempotency_key=key,
                    )
                return []
            if kind in ("steer", "interrupt"):
                cur = state.running_entry()
                if cur is None:
                    raise NotRunning(f"user_id={u!r} session_id={s!r}: no run is running to {kind}")
                if expected is not None and cur.run_id != expected:
                    raise StaleRun(
                        f"user_id={u!r} session_id={s!r}: the running run is {cur.run_id!r}, "
                        f"not {expected!r}; it is not interrupted",
                        expected_run_id=expected,
                        running_run_id=cur.run_id,
                    )
            doc = {
                "command_id": cid,
                "key": key,
                "kind": kind,
                "payload": body,
                "digest": dg,
                "submitted_at": time.time(),
            }
            return [LogEvent(COMMAND, doc, required=False, occurred_at=time.time())]

        state = await self.inbox.append(u, s, decide)
        slot = self.slot(u, s)
        slot.notify()
        self.ensure_driver(slot)
        return state.view(cid)

    async def cancel(self, session: AgentSession, command_id: str) -> TaskView:
        """Withdraw a queued command: it ends ``rejected`` (``error_type`` ``Cancelled``) and
        never runs; cancelling it again answers the same. Decided under the inbox's append lease, so a dispatcher's claim and a cancel
        never both win: the one recorded first does."""
        u, s = session.user_id, session.session_id
        inbox_session(s)

        def decide(state: InboxState) -> list[LogEvent]:
            entry = state.entries.get(command_id)
            if entry is None:
                raise UnknownCommand(f"user_id={u!r} session_id={s!r}: no command {command_id!r}")
            if entry.status == "rejected" and entry.error_type == "Cancelled":
                return []  # cancelled already: the same answer again
            if entry.status != "queued":
                raise CommandRejected(
                    f"command {command_id!r} is {entry.status}: only a queued command can be "
                    "cancelled (interrupt a running one)"
                )
            from .driver import status_event

            return [
                status_event(
                    command_id, "rejected", error="cancelled before it ran", error_type="Cancelled"
                )
            ]

        state = await self.inbox.append(u, s, decide)
        self.slot(u, s).notify()
        return state.view(command_id)

    async def state(self, user_id: str, session_id: str) -> InboxState:
        inbox_session(session_id)
        return await self.inbox.state(user_id, session_id)

    async def wait(self, session: AgentSession, command_id: str, timeout: float | None) -> TaskView:
        slot = self.slot(session.user_id, session.session_id)
        view = (await self.state(session.user_id, session.session_id)).view(command_id)
        with anyio.move_on_after(timeout) as scope:
            while True:
                changed = slot.changed
                view = (await self.state(session.user_id, session.session_id)).view(command_id)
                if view.done:
                    return view
                with anyio.move_on_after(self.host.poll_interval):
                    await changed.wait()
        assert scope.cancelled_caught
        raise WaitTimeout(f"command {command_id} did not end within {timeout}s ({view.status})")

    async def log_events(
        self, session: AgentSession, after: int, follow: bool, poll: float | None
    ) -> AsyncIterator[LogEvent]:
        if type(after) is not int or after < 0:
            raise InvalidCommand(f"after_seq is an int >= 0, got {after!r}")
        log_ = await self.session_log()
        slot = self.slot(session.user_id, session.session_id)
        interval = poll if poll is not None else self.host.poll_interval
        seq = after
        while True:
            changed = slot.changed
            page = await log_.read_after(session.user_id, session.session_id, seq, 500)
            for e in page:
                yield e
                seq = e.seq
            if len(page) == 500:
                continue
            if not follow:
                return
            with anyio.move_on_after(interval):
                await changed.wait()

    async def live_events(self, session: AgentSession, run_id: str) -> AsyncIterator[RunEvent]:
        async for e in self.live.follow(session.user_id, session.session_id, run_id):
            yield e

    # ------------------------------------------------------------------ dispatching
    def ensure_driver(self, slot: Slot) -> None:
        """Drive the session here if this replica can own it (else its owner will)."""
        if not self.host.dispatch or self.closing or self._tg is None:
            return
        if slot.driving:
            slot.wake.set()
            return
        slot.driving = True
        self._tg.start_soon(self._own_and_drive, slot)

    async def _own_and_drive(self, slot: Slot) -> None:
        from .driver import SessionDriver

        try:
            writer = await self.inbox.own(
                slot.user_id, slot.session_id, self.host.replica_id, self.host.owner_lease
            )
            if writer is None:
                return  # another live replica owns it
            await SessionDriver(self, slot, writer).run()
        except Exception:
            log.exception("session %r: the dispatcher failed; it is retried", slot)
        finally:
            slot.driving = False
            self._idle.set()

    async def _poll(self) -> None:
        """Every poll_interval: discover the served users' sessions, and drive those with
        unfinished commands that no live replica owns."""
        while not self.closing:
            try:
                for user in sorted(self.host.users):
                    async for sid in self.inbox.sessions(user):
                        self.slot(user, sid)
                for slot in list(self.slots.values()):
                    if slot.driving or self.closing:
                        continue
                    cached = self.inbox.cached(slot.user_id, slot.session_id)
                    head = await self.inbox.head_seq(slot.user_id, slot.session_id)
                    if cached is None or cached.seq != head or cached.unfinished():
                        state = await self.inbox.state(slot.user_id, slot.session_id)
                        if state.unfinished():
                            self.ensure_driver(slot)
            except Exception:
                log.exception("session host %s: polling the inbox failed", self.host.replica_id)
            with anyio.move_on_after(self.host.poll_interval):
                await self._discover.wait()
            self._discover = anyio.Event()


def _payload(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A command's stored payload, checked (``InvalidCommand``: nothing is recorded)."""
    try:
        if kind in ("submit", "steer"):
            return {"input": input_docs(payload["input"])}
        if kind == "resume":
            turn = check_id(payload["turn_id"], "turn_id")
            given = payload.get("input")
            return {"turn_id": turn, "input": input_docs(given) if given is not None else None}
        if kind == "respond":
            rid = payload["request_id"]
            return {"request_id": rid, "answer": encode_answer(rid, payload["answer"])}
        if kind == "interrupt":
            expected = payload.get("expected_run_id")
            if expected is not None:
                check_id(expected, "expected_run_id")
            return {"expected_run_id": expected}
    except InvalidCommand:
        raise
    except ValueError as exc:
        raise InvalidCommand(str(exc)) from None
    raise InvalidCommand(f"unknown command kind {kind!r}")
