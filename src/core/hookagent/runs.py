"""Run handles, per-execution interrupt controls, and the registry of executing runs.

An ``AgentRun`` is one prepared execution: ``run_id == ctx.run_id``. Awaiting ``result()`` runs
it in the awaiting task (no extra task); ``start()`` runs it in the agent's task group. Its
termination is resolved exactly once; every later ``result()`` returns or raises the same.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from .errors import AgentError, DuplicateRunId
from .events import RunEvent
from .messages import Msg

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RuntimeContext


class RunCancelled(AgentError):
    """The run was cancelled (before start it never executed)."""


class Interrupted(Exception):
    """Raised at a cooperative checkpoint after an interrupt; turned into a recovery reply."""


class InterruptControl:
    """A runtime-only interrupt signal owned by one execution (never stored)."""

    __slots__ = ("_scope", "message", "reason", "requested")

    def __init__(self) -> None:
        self.requested = False
        self.reason: str | None = None
        self.message: Msg | None = None
        self._scope: anyio.CancelScope | None = None

    def interrupt(self, message: Msg | str | None = None, *, reason: str = "user") -> None:
        if self.requested:
            return
        self.requested = True
        self.reason = reason
        self.message = Msg.user(message) if isinstance(message, str) else message
        if self._scope is not None:
            self._scope.cancel()

    def check(self) -> None:
        """A cooperative checkpoint."""
        if self.requested:
            raise Interrupted(self.reason)

    @contextmanager
    def step(self) -> Iterator[None]:
        """Run one model or tool step so that an interrupt aborts it at once."""
        self.check()
        scope = anyio.CancelScope()
        self._scope = scope
        try:
            with scope:
                yield
        finally:
            self._scope = None
        if scope.cancel_called and self.requested:
            raise Interrupted(self.reason)


@attrs.frozen
class RunInfo:
    run_id: str
    agent_id: str
    user_id: str
    session_id: str
    started_at: float
    parent_run_id: str | None = None

    @property
    def is_child(self) -> bool:
        return self.parent_run_id is not None


class AgentRun:
    """A handle on one execution; see the module docstring."""

    def __init__(self, agent: Agent, msgs: Any, ctx: RuntimeContext) -> None:
        self.agent = agent
        self.ctx = ctx
        self.msgs = msgs
        self.control = InterruptControl()
        self.status = "pending"  # pending | running | done | cancelled
        self.info: RunInfo | None = None
        self.parent: AgentRun | None = None  # the run this one is a subagent of
        self._scope: anyio.CancelScope | None = None
        self._events: list[RunEvent] = []
        self._event_added: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._subscribed = False
        self._reply: Msg | None = None
        self._error: BaseException | None = None
        self.rejected_by_shutdown = False

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    def __repr__(self) -> str:
        return f"<AgentRun {self.run_id} {self.status}>"

    # ---- execution
    async def result(self) -> Msg:
        """Run (if not started yet) and return the reply, or raise the run's error."""
        if self.status == "pending":
            await self._run()
        elif self.status in ("running", "cancelled") and not self._done_event().is_set():
            await self._done_event().wait()
        if self._error is not None:
            raise self._error
        assert self._reply is not None
        return self._reply

    def start(self) -> AgentRun:
        """Start in the agent's task group (the agent must be entered with ``async with``)."""
        if self.status == "pending":
            self.agent._spawn(self._run)
            self.status = "running"
        return self

    async def _run(self) -> None:
        if self.status == "cancelled":  # cancelled between start() and the task running
            self._error = RunCancelled(f"run {self.run_id} was cancelled before it started")
            self._done_event().set()
            return
        self.status = "running"
        try:
            self._reply = await self.agent._execute(self)
        except Exception as exc:
            self._error = exc
        except BaseException:  # cancelled from outside: resolve, then let it propagate
            self._error = RunCancelled(f"run {self.run_id} was cancelled")
            self.status = "cancelled"
            raise
        finally:
            if self.status == "running":
                self.status = "done"
            self._done_event().set()
            self._wake()

    def cancel(self) -> None:
        """Before start: it never executes. Running: cancelled; its input is saved."""
        if self.status == "pending":
            self._error = RunCancelled(f"run {self.run_id} was cancelled before it started")
            self.status = "cancelled"
            self._done_event().set()
        elif self.status == "running":
            self.status = "cancelled"
            if self._scope is not None:
                self._scope.cancel()

    def interrupt(self, message: Msg | str | None = None) -> None:
        """Cooperative: the run stops at its next checkpoint and saves a consistent state."""
        self.control.interrupt(message)

    # ---- events
    def _done_event(self) -> anyio.Event:
        if self._done is None:
            self._done = anyio.Event()
        return self._done

    def _push(self, event: RunEvent) -> None:
        self._events.append(event)
        self._wake()

    def _wake(self) -> None:
        if self._event_added is not None:
            self._event_added.set()
            self._event_added = None

    async def events(self) -> AsyncIterator[RunEvent]:
        """Every event of this run from its start, in order; subscribable once."""
        if self._subscribed:
            raise AgentError(f"the events of run {self.run_id} are already subscribed")
        self._subscribed = True
        i = 0
        while True:
            while i < len(self._events):
                event = self._events[i]
                i += 1
                yield event
                if event.is_end and event.run_id == self.run_id and not event.data.get("child"):
                    return
            if self._done is not None and self._done.is_set():
                return
            if self._event_added is None:
                self._event_added = anyio.Event()
            await self._event_added.wait()


class AgentRunRegistry:
    """The runs that are executing now: look up, list, interrupt or cancel by run_id.

    A second top-level run with a run_id that is executing is refused; a subagent run
    (derived context keeping the parent's run_id) is registered as a child instead.
    """

    def __init__(self) -> None:
        self._runs: dict[str, list[AgentRun]] = {}

    def register(self, run: AgentRun, info: RunInfo) -> None:
        entries = self._runs.setdefault(info.run_id, [])
        if not info.is_child and any(r.info and not r.info.is_child for r in entries):
            if not entries:
                del self._runs[info.run_id]
            raise DuplicateRunId(f"a run with run_id {info.run_id!r} is already executing")
        run.info = info
        entries.append(run)

    def unregister(self, run: AgentRun) -> None:
        entries = self._runs.get(run.run_id, [])
        if run in entries:
            entries.remove(run)
        if not entries:
            self._runs.pop(run.run_id, None)

    def list(self) -> Sequence[RunInfo]:
        return [r.info for entries in self._runs.values() for r in entries if r.info]

    def get(self, run_id: str) -> RunInfo | None:
        for run in self._runs.get(run_id, []):
            if run.info and not run.info.is_child:
                return run.info
        entries = self._runs.get(run_id)
        return entries[0].info if entries else None

    def handles(self, run_id: str) -> Sequence[AgentRun]:
        return list(self._runs.get(run_id, []))

    def interrupt(self, run_id: str, message: Msg | str | None = None) -> bool:
        runs = self.handles(run_id)
        for run in runs:
            run.interrupt(message)
        return bool(runs)

    def cancel(self, run_id: str) -> bool:
        runs = self.handles(run_id)
        for run in runs:
            run.cancel()
        return bool(runs)


def now() -> float:
    return time.time()
