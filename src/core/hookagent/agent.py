"""Configure once, build per request: the ``Agent`` an ``AgentConfig`` builds.

The configuration is immutable and shared; the first ``build()`` prepares what all agents of
that configuration share (plugins, tools, model, store, gate, run registry). An agent holds
no session: each call reads and writes the slot named by its ``RuntimeContext``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import attrs

from .config import AgentConfig
from .context import RuntimeContext
from .errors import AgentClosed, AgentError, HookContractError, InvalidMessage, RunCancelled
from .events import KERNEL_KINDS, RunEvent
from .execution import Execution
from .kernel import Kernel
from .messages import Msg, new_id
from .persist import persist
from .runs import AgentRun, RunInfo
from .state import AgentState, PendingInteraction
from .store.base import ConflictPolicy
from .store.ids import _CHECKED, check_id
from .turns import Answer

__all__ = ["Agent", "AgentConfig", "MsgInput", "emit_event"]
MsgInput = str | Msg | Sequence[Msg | str]


def _as_msgs(msgs: MsgInput | None, answers: Sequence[Answer]) -> list[Msg]:
    if type(msgs) is str:  # the common call: one user message
        return [Msg("user", msgs)]
    if msgs is None and answers:
        return []
    if isinstance(msgs, (str, Msg)):
        msgs = [msgs]
    if not isinstance(msgs, Sequence) or isinstance(msgs, (bytes, bytearray)):
        raise InvalidMessage(
            f"call() takes a str, a Msg or a sequence of them, got {type(msgs).__name__}"
        )
    out = [Msg.user(m) if isinstance(m, str) else m for m in msgs]
    bad = [type(m).__name__ for m in out if not isinstance(m, Msg)]
    if bad:
        raise InvalidMessage(f"call() got non-message input: {', '.join(bad)}")
    if not out and not answers:
        raise InvalidMessage("call() needs at least one message (or answers)")
    return out


class Agent:
    """One agent instance: owns its executions (and so their interrupt signals).

    It is the ``RunHost`` of its runs (``spawn``, ``execute``, ``emit``).
    """

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.config = kernel.config
        self.agent_id: str = kernel.config.id
        """The configuration's id (read on every run event: an attribute, not a property)."""
        self._active: dict[tuple[str, str], AgentRun] = {}
        self._queued: set[AgentRun] = set()
        self.slot_cache: dict[tuple[str, str], tuple[AgentState, int]] = {}
        """States this instance saved, by slot (used when ``reload_each_call`` is off)."""
        self._closing = False
        self._idle: anyio.Event | None = None
        self._tg: Any = None
        self._scope_type: Callable[[], anyio.CancelScope] = anyio.CancelScope

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Agent:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._scope_type = type(self._tg.cancel_scope)  # the backend's class: no lookup per run
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._active or self._queued:
                await self.shutdown(self.config.shutdown_timeout)
            else:  # nothing queued or running (an agent built per request): shutdown() inline
                self._closing = True
        finally:
            tg, self._tg = self._tg, None
            if tg is not None:
                await tg.__aexit__(None, None, None)

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        if self._tg is None:
            raise AgentError(
                "run.start() needs the agent entered with `async with`; or await run.result()"
            )
        self._tg.start_soon(fn)

    async def close(self) -> None:
        await self.shutdown(self.config.shutdown_timeout)

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Refuse new calls, let running ones finish for ``timeout`` s, then interrupt and save."""
        self._closing = True
        for run in list(self._queued):
            run.rejected_by_shutdown = True
            if run.scope is not None:
                run.scope.cancel()
        if self._active:
            with anyio.move_on_after(timeout):
                await self._wait_idle()
        if self._active:  # nothing runs (an agent built per request): no scope to open
            for run in list(self._active.values()):
                run.control.interrupt(reason="shutdown")
            with anyio.move_on_after(max(timeout, 5.0)):
                await self._wait_idle()

    async def _wait_idle(self) -> None:
        while self._active:
            self._idle = anyio.Event()
            await self._idle.wait()

    # ------------------------------------------------------------------ calls
    def prepare_call(
        self,
        msgs: MsgInput | None = None,
        ctx: RuntimeContext | None = None,
        *,
        answers: Sequence[Answer] = (),
    ) -> AgentRun:
        """A handle on one execution (``run.run_id == ctx.run_id``); nothing runs yet.

        ``answers`` (``Approve``, ``Reject``, ``ExternalResult``) continue the session's
        suspended turn instead of starting one; a call carries input or answers.
        """
        answers = tuple(answers)
        ctx = ctx if ctx is not None else RuntimeContext()
        return AgentRun(self, _as_msgs(msgs, answers), ctx, answers)

    async def call(
        self,
        msgs: MsgInput | None = None,
        ctx: RuntimeContext | None = None,
        *,
        answers: Sequence[Answer] = (),
    ) -> Msg:
        """Run one call to its reply (the flow: docs/quickstart.md, "What a call does")."""
        answers = tuple(answers)  # prepare_call(), inline
        ctx = ctx if ctx is not None else RuntimeContext()
        inputs = [Msg("user", msgs)] if type(msgs) is str else _as_msgs(msgs, answers)
        return await AgentRun(self, inputs, ctx, answers).result()

    def call_sync(
        self,
        msgs: MsgInput | None = None,
        ctx: RuntimeContext | None = None,
        *,
        answers: Sequence[Answer] = (),
    ) -> Msg:
        async def run() -> Msg:
            return await self.call(msgs, ctx, answers=answers)

        return self.kernel.portal().call(run)

    def interrupt(
        self, user_id: str, session_id: str | None = None, message: Msg | str | None = None
    ) -> bool:
        """Interrupt the running execution of that slot only; False if the session is idle
        (a suspended session is idle: it waits for answers, nothing runs)."""
        run = self._active.get((user_id, session_id or self.config.default_session_id))
        if run is None:
            return False
        run.interrupt(message)
        return True

    async def execute(self, run: AgentRun) -> Msg:
        """Admit ``run`` (registry, session gate) and execute it to its reply."""
        ctx = run.ctx
        user_id, session_id = ctx.user_id, ctx.session_id or self.config.default_session_id
        if not (type(user_id) is str and (not user_id or user_id in _CHECKED)):
            check_id(user_id, "user_id", allow_empty=True)  # not checked before (a memo miss)
        if not (type(session_id) is str and session_id in _CHECKED):
            check_id(session_id, "session_id")
        if self._closing:
            raise AgentClosed(f"agent {self.agent_id!r} is shutting down; the call was not run")
        # a child only when this process derived the context from a running parent (the
        # parent's handle travels in the context); a claimed parent_run_id proves nothing
        typed = ctx._typed  # put()/get() inlined: a fresh context has no typed attributes
        parent = ctx.get(AgentRun) if typed else None
        is_child = (
            parent is not None
            and parent is not run
            and parent.run_id == ctx.run_id
            and parent.status == "running"
        )
        if is_child and parent is not None and parent.info is not None:
            if (parent.info.user_id, parent.info.session_id) == (user_id, session_id):
                raise AgentError(
                    f"a subagent call on the parent's own session {session_id!r} would wait "
                    "for the parent forever: derive its context with its own session_id"
                )
        if not run.answers and ctx.turn_id is None:
            # a new turn; answers take the suspended turn's id later (what __setattr__ does)
            object.__setattr__(ctx, "turn_id", new_id())
        info = RunInfo(
            ctx.run_id,
            self.agent_id,
            user_id,
            session_id,
            time.time(),
            ctx.run_id if is_child else None,
            ctx.turn_id,
        )
        registry = self.kernel.registry
        run.parent = parent if is_child else None
        registry.register(run, info)
        caller = ctx.get(Agent) if typed else None  # a subagent's context: its parent's agent
        typed[AgentRun] = run
        typed[Agent] = self  # plugins reach the agent running the call: ctx.get(Agent)
        key = (user_id, session_id)
        try:
            with self._scope_type() as scope:
                run.scope = scope
                run.control.scope_type = type(scope)  # the backend's class: no lookup per step
                if run.status == "cancelled":  # cancel() came before the scope existed
                    scope.cancel()
                self._queued.add(run)
                try:
                    gate = self.kernel.gate.acquire(
                        user_id, session_id, timeout=self.config.gate_timeout
                    )
                    async with gate as fence:
                        self._queued.discard(run)
                        if self._closing:
                            raise AgentClosed(f"agent {self.agent_id!r} is shutting down")
                        self._active[key] = run
                        try:
                            return await Execution(self, run, user_id, session_id, fence).execute()
                        finally:
                            del self._active[key]
                            object.__setattr__(ctx, "agent_state", None)  # its __setattr__'s
                            if not self._active and self._idle is not None:
                                self._idle.set()
                finally:
                    self._queued.discard(run)
            if run.rejected_by_shutdown:
                raise AgentClosed(f"agent {self.agent_id!r} shut down before the call was admitted")
            raise RunCancelled(f"run {run.run_id} was cancelled")
        finally:
            run.scope = None
            registry.unregister(run)
            typed[AgentRun] = parent
            typed[Agent] = caller

    async def emit(self, run: AgentRun, kind: str, data: dict[str, Any]) -> None:
        """Record a run event on the run (and its parents) and hand it to the observers."""
        event = self.record_event(run, kind, data)
        relay = self.kernel.relay
        callers = relay.event_callers()
        if callers:  # nobody observes and nothing monitors: no dispatch at all
            await relay.deliver(callers, event)

    def record_event(self, run: AgentRun, kind: str, data: dict[str, Any]) -> RunEvent:
        """The event, recorded on the run and forwarded to its parents (not yet observed)."""
        info = run.info
        assert info is not None  # events are emitted only for admitted runs
        ctx = run.ctx
        event = RunEvent(
            kind,
            self.agent_id,
            info.user_id,
            info.session_id,
            ctx.run_id,
            run.event_count,
            data,
            turn_id=ctx.turn_id,
        )
        run.record(event)
        parent = run.parent
        while parent is not None:
            parent.record(
                attrs.evolve(event, data={**data, "child": True, "agent_id": self.agent_id})
            )
            parent = parent.parent
        return event

    # ------------------------------------------------------------------ admin operations
    def _slot(self, user_or_ctx: str | RuntimeContext, session_id: str | None) -> tuple[str, str]:
        if isinstance(user_or_ctx, RuntimeContext):
            user_id, session_id = user_or_ctx.user_id, user_or_ctx.session_id
        else:
            user_id = user_or_ctx
        return (
            check_id(user_id, "user_id", allow_empty=True),
            check_id(session_id or self.config.default_session_id, "session_id"),
        )

    async def get_agent_state(self, user_id: str = "", session_id: str | None = None) -> AgentState:
        """The slot's committed state (a detached copy); an empty state if the slot is absent."""
        u, s = self._slot(user_id, session_id)
        got = await (await self.kernel.store()).get_versioned(u, s)
        return got.state or AgentState(session_id=s, user_id=u)

    async def pending_interactions(
        self, user_id: str = "", session_id: str | None = None
    ) -> list[PendingInteraction]:
        """What the session's suspended turn waits for (empty when nothing is pending)."""
        return list((await self.get_agent_state(user_id, session_id)).turn_context.pending)

    async def clear_context(
        self, user_or_ctx: str | RuntimeContext, session_id: str | None = None
    ) -> bool:
        """Clear history and summary (other sections stay), saved at once; False if no slot."""
        return await self.update_agent_state(
            user_or_ctx, "clear_context", AgentState.clear_context, session_id=session_id
        )

    async def update_agent_state(
        self,
        user_or_ctx: str | RuntimeContext,
        reason: str,
        mutation: Callable[[AgentState], Any],
        *,
        session_id: str | None = None,
        create: bool = False,
    ) -> bool:
        """Apply ``mutation`` under the session's gate at the loaded version; record ``reason``.

        Waits for a running call on that session to finish first (it is not cancelled). The
        save is a compare-and-set: a concurrent writer elsewhere makes it raise
        ``VersionConflict`` rather than lose either write. ``mutation`` changes the state in
        place (it may be async); what it returns is ignored.
        """
        u, s = self._slot(user_or_ctx, session_id)
        store = await self.kernel.store()
        ctx = RuntimeContext(user_id=u, session_id=s)
        async with self.kernel.gate.acquire(u, s, timeout=self.config.gate_timeout) as fence:
            got = await store.get_versioned(u, s)
            if got.state is None and not create:
                return False
            state = got.state or AgentState(session_id=s, user_id=u)
            result = mutation(state)
            if inspect.isawaitable(result):
                await result
            log = state.extensions.setdefault("admin_log", [])
            if isinstance(log, list):
                log.append({"reason": reason, "at": time.time(), "run_id": ctx.run_id})
                del log[:-20]
            ctx.agent_state = state
            await persist(
                self.kernel,
                state,
                ctx,
                (u, s),
                outcome="admin",
                version=got.version,
                fence=fence,
                loaded_len=len(state.context),
                policy=ConflictPolicy.FAIL,
            )
        self.slot_cache.pop((u, s), None)
        return True

    # ------------------------------------------------------------------ sync twins
    def get_agent_state_sync(self, user_id: str = "", session_id: str | None = None) -> AgentState:
        return self.kernel.portal().call(self.get_agent_state, user_id, session_id)

    def clear_context_sync(
        self, user_or_ctx: str | RuntimeContext, session_id: str | None = None
    ) -> bool:
        return self.kernel.portal().call(self.clear_context, user_or_ctx, session_id)

    def update_agent_state_sync(
        self,
        user_or_ctx: str | RuntimeContext,
        reason: str,
        mutation: Callable[[AgentState], Any],
        *,
        session_id: str | None = None,
    ) -> bool:
        async def run() -> bool:
            return await self.update_agent_state(
                user_or_ctx, reason, mutation, session_id=session_id
            )

        return self.kernel.portal().call(run)

    def close_sync(self) -> None:
        self.kernel.portal().call(self.close)


async def emit_event(ctx: RuntimeContext, kind: str, **data: Any) -> bool:
    """A plugin's run event (``task_changed``, ``permission_decision``, ...) on the run
    executing ``ctx``: observers and ``run.events()`` see it like the kernel's own.

    Returns False, doing nothing, when ``ctx`` belongs to no running call (an admin change
    made outside a run). The kernel's kinds (``run_started``, ``tool_called``, ...) are the
    kernel's: emitting one is a ``HookContractError``.
    """
    if not isinstance(kind, str) or not kind or kind in KERNEL_KINDS:
        raise HookContractError(
            f"run event kind {kind!r}: use a non-empty kind of your own, not one of the kernel's"
        )
    run, agent = ctx.get(AgentRun), ctx.get(Agent)
    if run is None or agent is None or run.info is None or run.status != "running":
        return False
    await agent.emit(run, kind, data)
    return True
