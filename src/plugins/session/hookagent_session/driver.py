"""One owned session's dispatcher: claim the next command, run it, apply steer/interrupt.

The driver holds the session's owner lease (renewed every third of it). It claims a command
(``starting``, attempt n, run_id ``<command_id>.<n>``), runs it through the kernel (the
session-log plugin makes the run the session log's writer, owned by that run_id), marks it
``running`` once the run holds that lease, and records its final status. A claim it finds
from a replica that lost the session is taken over (``takeover.py``). Losing the owner
lease stops new claims; a run already going finishes here (its log lease is its own).
"""

from __future__ import annotations

import logging
import random
import time
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from hookagent import AgentRun, Msg, RunEvent, RuntimeContext
from hookagent.errors import (
    AgentClosed,
    AnswerError,
    LeaseHeld,
    RunCancelled,
    VersionConflict,
)
from hookagent.sessionlog import LogEvent, LogWriter
from hookagent.turns import GENERATE_REASON
from hookagent_session_log import RunAlreadyRecorded, TurnAlreadyCompleted, UncertainToolCalls

from .errors import CommandRejected, NotRunning, StaleRun
from .fold import STATUS, Entry, InboxState
from .model import decode_answer, decode_input, run_id_for
from .takeover import outcome_of_run, take_over

if TYPE_CHECKING:
    from .core import Core, Slot

log = logging.getLogger("hookagent.session")
RESUME_INPUT = "Continue where you stopped."
_STATUS_OF = {
    "COMPLETED": "completed",
    "SUSPENDED": "suspended",
    "INTERRUPTED": "interrupted",
}
_RETRY = (LeaseHeld, VersionConflict)
"""The session log was held by another writer (an admin change, a direct call) when the
run tried to take it: nothing ran; the same attempt is tried again."""


def status_event(command_id: str, status: str, **fields: Any) -> LogEvent:
    payload = {"command_id": command_id, "status": status}
    payload.update({k: v for k, v in fields.items() if v is not None})
    return LogEvent(STATUS, payload, required=False, occurred_at=time.time())


class SessionDriver:
    def __init__(self, core: Core, slot: Slot, owner: LogWriter) -> None:
        self.core, self.slot, self.owner = core, slot, owner
        self.u, self.s = slot.user_id, slot.session_id
        self.replica = core.host.replica_id
        self.mine: set[tuple[str, int]] = set()
        """Claims this driver made (a claim under our replica_id from an earlier life is not)."""
        self.local: AgentRun | None = None
        """The run executing here now (None while it is being prepared)."""
        self.busy: str | None = None
        """The command executing here now (from its start until its final status)."""
        self.lost = False
        self._tg: TaskGroup | None = None

    # ------------------------------------------------------------------ the loop
    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._renew)
                try:
                    await self._loop()
                finally:
                    tg.cancel_scope.cancel()
        finally:
            if not self.lost:
                with anyio.CancelScope(shield=True):
                    await self.core.inbox.release_owner(self.owner)

    async def _renew(self) -> None:
        lease = self.core.host.owner_lease
        while True:
            await anyio.sleep(lease / 3)
            renewed = await self.core.inbox.renew_owner(self.owner, lease)
            if renewed is None:
                log.warning("session %s/%s: the owner lease was lost", self.u, self.s)
                self.lost = True
                self.slot.wake.set()
                return
            self.owner = renewed

    async def _loop(self) -> None:
        while True:
            self.slot.wake = anyio.Event()
            state = await self.core.inbox.state(self.u, self.s)
            await self._controls(state)
            if self.busy is None:
                if self.lost or self.core.closing:
                    return
                progressed = await self._step(state)
                if progressed:
                    continue
                if not state.unfinished():
                    return
            with anyio.move_on_after(self.core.host.poll_interval):
                await self.slot.wake.wait()

    async def _step(self, state: InboxState) -> bool:
        """Start or take over what comes next; False when there is nothing to do now."""
        for e in state.claimed():
            if self._ours(e):
                target = state.by_run(e.target)
                if e.kind == "steer" and e.status == "starting":
                    if target is not None and not target.final:
                        return False  # the steered run has not ended yet
                    self._start(e)
                    return True
                return False  # ours, and its task ended without a final status (shutdown)
            log_ = await self.core.session_log()
            decision = await take_over(log_, self.u, self.s, e)
            if decision is None:
                return False  # its run is live on another replica
            if decision == "rerun":
                return await self._claim(e, e.attempt + 1)
            await self._final(e, **decision)
            return True
        nxt = state.next_queued()
        if nxt is None:
            return False
        return await self._claim(nxt, 1)

    # ------------------------------------------------------------------ claims
    async def _claim(self, e: Entry, attempt: int, **extra: Any) -> bool:
        log_ = await self.core.session_log()
        log_seq = (await log_.head(self.u, self.s)).seq
        run_id = run_id_for(e.command_id, attempt)
        cid = e.command_id

        def decide(state: InboxState) -> list[LogEvent]:
            cur = state.entries[cid]
            if cur.final or cur.attempt >= attempt:
                return []  # claimed (or ended) meanwhile
            fields = {"attempt": attempt, "run_id": run_id, "replica": self.replica}
            return [status_event(cid, "starting", log_seq=log_seq, **fields, **extra)]

        state = await self.core.inbox.append(self.u, self.s, decide)
        cur = state.entries[cid]
        if cur.attempt != attempt or cur.replica != self.replica or cur.final:
            return False
        self.mine.add((cid, attempt))
        if cur.kind != "steer" or extra.get("target") is None:
            self._start(cur)
        self.slot.notify()
        return True

    async def _append(self, e: Entry, status: str, **fields: Any) -> None:
        event = status_event(e.command_id, status, attempt=e.attempt or None, **fields)
        await self.core.inbox.append(self.u, self.s, lambda _state: [event])
        self.slot.notify()

    async def _final(self, e: Entry, status: str, **fields: Any) -> None:
        await self._append(e, status, **fields)

    # ------------------------------------------------------------------ steer, interrupt
    async def _controls(self, state: InboxState) -> None:
        for e in state.controls():
            run = self.local
            cur = state.running_entry()
            if run is None and (self.busy is not None or (cur is not None and not self._ours(cur))):
                continue  # being prepared here, or a run on another replica (it applies them)
            if run is None:
                err = NotRunning(f"no run of session {self.s!r} was running")
                await self._final(e, "rejected", error=str(err), error_type="NotRunning")
                continue
            expected = e.payload.get("expected_run_id")
            if e.kind == "interrupt":
                if expected is not None and expected != run.run_id:
                    err2 = StaleRun(
                        f"the running run is {run.run_id!r}, not {expected!r}",
                        expected_run_id=str(expected),
                        running_run_id=run.run_id,
                    )
                    await self._final(e, "rejected", error=str(err2), error_type="StaleRun")
                    continue
                run.interrupt()
                await self._final(e, "completed", target=run.run_id)
            else:
                run.interrupt()
                await self._claim(e, 1, target=run.run_id, turn_id=run.turn_id)

    def _ours(self, e: Entry) -> bool:
        return (e.command_id, e.attempt) in self.mine

    # ------------------------------------------------------------------ running
    def _start(self, e: Entry) -> None:
        assert self._tg is not None
        self.busy = e.command_id
        self.local = None
        self._tg.start_soon(self._execute, e)

    def _prepare(
        self, e: Entry, state: InboxState
    ) -> tuple[list[Msg] | None, list[Any], str | None]:
        """The run's input, answers and turn_id (``CommandRejected``: it cannot apply)."""
        p = e.payload
        if e.kind == "submit":
            return decode_input(p["input"]), [], None
        if e.kind == "steer":
            return decode_input(p["input"]), [], e.turn_id
        if e.kind == "resume":
            turn = str(p["turn_id"])
            latest = state.latest_turn(e.seq)
            if latest is None or latest.turn_id != turn:
                raise CommandRejected(
                    f"turn {turn!r} is not the session's latest turn "
                    f"({latest.turn_id if latest else None!r})"
                )
            if latest.status not in ("interrupted", "failed"):
                raise CommandRejected(f"turn {turn!r} is {latest.status}, not unfinished")
            given = p.get("input")
            return (decode_input(given) if given else [Msg.user(RESUME_INPUT)]), [], turn
        answer = decode_answer(p["answer"])
        return None, [answer], None

    async def _execute(self, e: Entry) -> None:
        run_id = run_id_for(e.command_id, e.attempt)
        try:
            async with self.core.limiter:
                await self._execute_claimed(e, run_id)
        except Exception as exc:
            log.exception("session %s/%s: command %s", self.u, self.s, e.command_id)
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                try:
                    await self._final(e, "failed", error=str(exc), error_type=type(exc).__name__)
                except Exception:
                    log.exception("session %s/%s: recording the failure", self.u, self.s)
        finally:
            self.local = None
            self.busy = None
            self.core.live.drop(self.u, self.s, run_id)
            self.slot.notify()

    async def _execute_claimed(self, e: Entry, run_id: str) -> None:
        delay = 0.05
        while True:
            state = await self.core.inbox.state(self.u, self.s)
            try:
                msgs, answers, turn_id = self._prepare(e, state)
                if e.kind == "respond":
                    await self._check_pending(str(e.payload["request_id"]))
            except (CommandRejected, AnswerError, UncertainToolCalls) as exc:
                await self._final(e, "rejected", error=str(exc), error_type=type(exc).__name__)
                return
            ctx = RuntimeContext(self.u, self.s, run_id, turn_id=turn_id)
            run = self.core.agent.prepare_call(msgs, ctx, answers=answers)
            self.local = run
            outcome = await self._run_once(e, run)
            if outcome is not None:
                if outcome:  # {}: shutting down before it was admitted: left claimed
                    await self._final(e, **outcome)
                return
            self.local = None  # the session log was busy: nothing ran; try again
            if self.lost or self.core.closing:
                return  # the next owner takes the claim over (it never took input)
            await anyio.sleep(random.uniform(delay / 2, delay))
            delay = min(delay * 2, 2.0)

    async def _check_pending(self, request_id: str) -> None:
        pending = await self.core.agent.pending_interactions(self.u, self.s)
        if request_id not in {p.tool_use_id for p in pending}:
            raise CommandRejected(f"request {request_id!r} is not pending in session {self.s!r}")

    async def _run_once(self, e: Entry, run: AgentRun) -> dict[str, Any] | None:
        """Run it; the final status's fields, or None when it should be tried again."""
        live = self.core.live.add(self.u, self.s, run)
        running = anyio.Event()
        marked: list[bool] = [False, False]  # state loaded, running written

        def on_event(event: RunEvent) -> None:
            self.slot.notify()
            if event.kind == "state_loaded":
                marked[0] = True
            elif marked[0] and not marked[1] and not event.is_end and self._tg is not None:
                marked[1] = True
                self._tg.start_soon(self._mark_running, e, event.turn_id, running)

        error: BaseException | None = None
        reply: Msg | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(live.pump, on_event)
            try:
                reply = await run.result()
            except Exception as exc:
                error = exc
        if marked[1]:
            await running.wait()
        turn = run.turn_id
        if error is None and reply is not None:
            reason = str(reply.metadata.get(GENERATE_REASON, "COMPLETED"))
            return {
                "status": _STATUS_OF.get(reason, "completed"),
                "reply": reply.text,
                "generate_reason": reason,
                "turn_id": turn,
            }
        assert error is not None
        kind = type(error).__name__
        if isinstance(error, _RETRY) and not marked[1]:
            return None
        if isinstance(error, (AgentClosed, RunCancelled)) and not marked[1]:
            return None if not self.core.closing else {}  # {}: leave it claimed
        if isinstance(error, RunAlreadyRecorded):
            log_ = await self.core.session_log()
            return await outcome_of_run(log_, self.u, self.s, e) or {
                "status": "interrupted",
                "error": str(error),
                "error_type": kind,
            }
        status = "rejected" if isinstance(error, (AnswerError, TurnAlreadyCompleted)) else "failed"
        return {"status": status, "error": str(error), "error_type": kind, "turn_id": turn}

    async def _mark_running(self, e: Entry, turn_id: str | None, done: anyio.Event) -> None:
        try:
            await self._append(e, "running", turn_id=turn_id)
        except Exception:
            log.warning("session %s/%s: could not mark %s running", self.u, self.s, e.command_id)
        finally:
            done.set()
