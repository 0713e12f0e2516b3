"""Run handles, per-execution interrupt controls, and the registry of executing runs.

An ``AgentRun`` is one prepared execution: ``run_id == ctx.run_id``. Awaiting ``result()`` runs
it in the awaiting task (no extra task); ``start()`` runs it in the agent's task group. Its
termination is resolved exactly once; every later ``result()`` returns or raises the same.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import anyio
import attrs

from .errors import AgentError, DuplicateRunId, Interrupted, RunCancelled
from .events import RunEvent
from .messages import Msg

if TYPE_CHECKING:
    from .context import RuntimeContext
    from .turns import Answer

_Raw: TypeAlias = tuple[int, str, dict[str, Any], float, "str | None"]
"""An event recorded but not yet made: (seq, kind, data, timestamp, turn_id)."""

__all__ = [
    "AgentRun",
    "AgentRunRegistry",
    "InterruptControl",
    "Interrupted",
    "RunCancelled",
    "RunHost",
    "RunInfo",
]


class RunHost(Protocol):
    """What a run handle needs from the agent that admitted it (``Agent`` implements it)."""

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the host's task group (``run.start()``)."""

    async def execute(self, run: AgentRun) -> Msg:
        """Admit and execute the run to its reply."""
        ...


class InterruptControl:
    """A runtime-only interrupt signal owned by one execution (never stored)."""

    __slots__ = ("_scopes", "message", "reason", "requested", "scope_type")

    def __init__(self) -> None:
        self.requested = False
        self.reason: str | None = None
        self.message: Msg | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self.scope_type: Callable[[], anyio.CancelScope] = anyio.CancelScope
        """What makes a step's scope: the host sets the running backend's own class (from
        the run's scope), so a step skips anyio's backend lookup and its second
        ``__init__``; ``anyio.CancelScope`` until then."""

    def interrupt(self, message: Msg | str | None = None, *, reason: str = "user") -> None:
        if self.requested:
            return
        self.requested = True
        self.reason = reason
        self.message = Msg.user(message) if isinstance(message, str) else message
        for scope in list(self._scopes):
            scope.cancel()

    def check(self) -> None:
        """A cooperative checkpoint."""
        if self.requested:
            raise Interrupted(self.reason)

    def step(self) -> _Step:
        """Run one model or tool step so that an interrupt aborts it at once (several steps
        may run at once: parallel tool calls)."""
        return _Step(self)


class _Step:
    """``with control.step():`` -- one cancel scope that ``interrupt()`` cancels; leaving it
    cancelled by an interrupt raises ``Interrupted``. (A class, not a generator: a call
    makes three.)"""

    __slots__ = ("control", "scope")

    def __init__(self, control: InterruptControl) -> None:
        self.control = control
        self.scope: anyio.CancelScope | None = None

    def __enter__(self) -> None:
        control = self.control
        if control.requested:
            control.check()
        scope = self.scope = control.scope_type()
        control._scopes.add(scope)
        scope.__enter__()

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        scope, control = self.scope, self.control
        assert scope is not None
        try:
            swallowed = bool(scope.__exit__(kind, exc, tb))
        finally:
            control._scopes.discard(scope)
        if kind is not None and not swallowed:
            return False
        if scope.cancel_called and control.requested:
            raise Interrupted(control.reason) from None
        return swallowed


@attrs.frozen
class RunInfo:
    run_id: str
    agent_id: str
    user_id: str
    session_id: str
    started_at: float
    parent_run_id: str | None = None
    turn_id: str | None = None

    @property
    def is_child(self) -> bool:
        return self.parent_run_id is not None


class AgentRun:
    """A handle on one execution; see the module docstring."""

    def __init__(
        self,
        host: RunHost,
        msgs: Sequence[Msg],
        ctx: RuntimeContext,
        answers: Sequence[Answer] = (),
    ) -> None:
        self.host = host
        self.ctx = ctx
        self.msgs = msgs
        self.answers = tuple(answers)
        self.control = InterruptControl()
        self.status = "pending"  # pending | running | done | cancelled
        self.info: RunInfo | None = None
        self.parent: AgentRun | None = None  # the run this one is a subagent of
        self.scope: anyio.CancelScope | None = None
        """The cancel scope of the admitted execution (set by the host while it runs)."""
        self._events: list[RunEvent | _Raw] = []
        """In order; the run's own events that nobody observed when they happened are kept
        as ``_Raw`` tuples and made ``RunEvent`` only when ``events()`` reads them."""
        self.event_count = 0
        """How many events this run recorded (the next event's ``seq``)."""
        self._event_added: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._finished = False
        """Resolved (reply or error set); the event is made only for someone who waits."""
        self._subscribed = False
        self._reply: Msg | None = None
        self._error: BaseException | None = None
        self.rejected_by_shutdown = False
        self.registry_key: tuple[str, str] | None = None
        """Where the registry filed this run while it executes."""

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    @property
    def turn_id(self) -> str | None:
        """The turn this run belongs to (set when the run is admitted)."""
        return self.ctx.turn_id

    def __repr__(self) -> str:
        return f"<AgentRun {self.run_id} {self.status}>"

    # ---- execution
    async def result(self) -> Msg:
        """Run (if not started yet) and return the reply, or raise the run's error."""
        if self.status == "pending":
            await self._run()
        elif self.status in ("running", "cancelled") and not self._finished:
            await self._done_event().wait()
        if self._error is not None:
            raise self._error
        assert self._reply is not None
        return self._reply

    def start(self) -> AgentRun:
        """Start in the agent's task group (the agent must be entered with ``async with``)."""
        if self.status == "pending":
            self.host.spawn(self._run)
            self.status = "running"
        return self

    async def _run(self) -> None:
        if self.status == "cancelled":  # cancelled between start() and the task running
            self._error = RunCancelled(f"run {self.run_id} was cancelled before it started")
            self._resolve()
            return
        self.status = "running"
        try:
            self._reply = await self.host.execute(self)
        except Exception as exc:
            self._error = exc
        except BaseException:  # cancelled from outside: resolve, then let it propagate
            self._error = RunCancelled(f"run {self.run_id} was cancelled")
            self.status = "cancelled"
            raise
        finally:
            if self.status == "running":
                self.status = "done"
            self._finished = True  # _resolve() and _wake(), inline: once per run
            if self._done is not None:
                self._done.set()
            if self._event_added is not None:
                self._wake()

    def cancel(self) -> None:
        """Before start: it never executes. Running: cancelled; its input is saved."""
        if self.status == "pending":
            self._error = RunCancelled(f"run {self.run_id} was cancelled before it started")
            self.status = "cancelled"
            self._resolve()
        elif self.status == "running":
            self.status = "cancelled"
            if self.scope is not None:
                self.scope.cancel()

    def interrupt(self, message: Msg | str | None = None) -> None:
        """Cooperative: the run stops at its next checkpoint and saves a consistent state."""
        self.control.interrupt(message)

    # ---- events
    def _done_event(self) -> anyio.Event:
        if self._done is None:
            self._done = anyio.Event()
            if self._finished:
                self._done.set()
        return self._done

    def _resolve(self) -> None:
        self._finished = True
        if self._done is not None:
            self._done.set()

    def record(self, event: RunEvent) -> None:
        """Add an event to this run's stream (the host does, for it and its subagents)."""
        self._events.append(event)
        self.event_count += 1
        if self._event_added is not None:
            self._wake()

    def record_raw(self, kind: str, data: dict[str, Any]) -> None:
        """Add one of this run's own events without making its ``RunEvent`` yet (ten per
        call, which nobody may ever read): ``events()`` makes it, with the same fields."""
        self._events.append((self.event_count, kind, data, time.time(), self.ctx.turn_id))
        self.event_count += 1
        if self._event_added is not None:
            self._wake()

    def _made(self, i: int) -> RunEvent:
        event = self._events[i]
        if type(event) is tuple:
            seq, kind, data, at, turn_id = event
            info = self.info
            assert info is not None  # recorded only while admitted
            event = self._events[i] = RunEvent(
                kind,
                info.agent_id,
                info.user_id,
                info.session_id,
                info.run_id,
                seq,
                data,
                timestamp=at,
                turn_id=turn_id,
            )
        return event  # type: ignore[return-value]  # a RunEvent, made above if it was raw

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
                event = self._made(i)
                i += 1
                yield event
                if event.is_end and event.run_id == self.run_id and not event.data.get("child"):
                    return
            if self._finished:
                return
            if self._event_added is None:
                self._event_added = anyio.Event()
            await self._event_added.wait()


class AgentRunRegistry:
    """The runs executing now: look up, list, interrupt or cancel by (user_id, run_id).

    Every lookup is scoped to one user (a service passes the authenticated one): another
    user's run_id is invisible, and reusing it is not a conflict. A second top-level run
    of one user with a run_id that is executing is refused. A subagent run is a child
    because the kernel derived its context from a running parent in this process (the
    parent's handle travels in the context), never because a context claims a
    ``parent_run_id``; it is filed under its root's user so the root's interrupt reaches it.
    """

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], list[AgentRun]] = {}

    @staticmethod
    def _key(run: AgentRun, info: RunInfo) -> tuple[str, str]:
        root = run
        while root.parent is not None:
            root = root.parent
        user = root.info.user_id if root is not run and root.info else info.user_id
        return (user, info.run_id)

    def register(self, run: AgentRun, info: RunInfo) -> None:
        key = self._key(run, info)
        entries = self._runs.setdefault(key, [])
        if (
            entries
            and info.parent_run_id is None  # not info.is_child
            and any(r.info and not r.info.is_child for r in entries)
        ):
            if not entries:
                del self._runs[key]
            raise DuplicateRunId(
                f"a run with run_id {info.run_id!r} is already executing for user_id "
                f"{info.user_id!r}"
            )
        run.info = info
        run.registry_key = key
        entries.append(run)

    def unregister(self, run: AgentRun) -> None:
        key = run.registry_key  # where register() filed it: no walk over every run
        entries = self._runs.get(key) if key is not None else None
        if entries is not None and run in entries:
            entries.remove(run)
            if not entries:
                del self._runs[key]  # type: ignore[arg-type]  # not None: found above
            return
        for key, entries in list(self._runs.items()):
            if run in entries:
                entries.remove(run)
                if not entries:
                    del self._runs[key]
                return

    def list(self, user_id: str) -> Sequence[RunInfo]:
        """The user's executing runs (subagent runs included)."""
        return [
            r.info
            for (u, _), entries in self._runs.items()
            if u == user_id
            for r in entries
            if r.info
        ]

    def list_all(self) -> Sequence[RunInfo]:
        """Every user's executing runs: for operators only, never behind a user's request."""
        return [r.info for entries in self._runs.values() for r in entries if r.info]

    def get(self, user_id: str, run_id: str) -> RunInfo | None:
        entries = self._runs.get((user_id, run_id), [])
        for run in entries:
            if run.info and not run.info.is_child:
                return run.info
        return entries[0].info if entries else None

    def handles(self, user_id: str, run_id: str) -> Sequence[AgentRun]:
        return list(self._runs.get((user_id, run_id), []))

    def interrupt(self, user_id: str, run_id: str, message: Msg | str | None = None) -> bool:
        runs = self.handles(user_id, run_id)
        for run in runs:
            run.interrupt(message)
        return bool(runs)

    def cancel(self, user_id: str, run_id: str) -> bool:
        runs = self.handles(user_id, run_id)
        for run in runs:
            run.cancel()
        return bool(runs)
