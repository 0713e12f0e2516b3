"""One admitted run, under the session gate: load, answer or start a turn, reason and act,
recover, persist. Whatever happens, exactly one start and one end event are emitted.

A run that fails saves the user's input without partial output (answered tool results
count as input); an interrupted one closes open tool calls as ``interrupted`` and appends a
recovery reply; a suspended one saves the pending interactions in ``turn_context``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ._done import DONE
from .context import _LOADING
from .errors import AnswerError, Interrupted, InvalidMessage, TurnMismatch, UnknownInteraction
from .messages import Msg, ToolResultBlock, new_id
from .model_step import ask_model
from .persist import persist
from .recovery import (
    close_open_tool_uses,
    drop_resent_input,
    finish_step,
    step_message,
    synthetic_reply,
)
from .state import AgentState, PendingInteraction, TurnContext
from .store.base import Fence
from .tool_step import Outcome, run_calls
from .tools import Tool, ToolCall, error_result
from .turns import (
    GENERATE_REASON,
    SUSPEND_KIND,
    Answer,
    Approve,
    ExternalResult,
    GenerateReason,
    Reject,
    describe,
    match_answers,
    suspend_kind,
)

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RuntimeContext
    from .runs import AgentRun

log = logging.getLogger("hookagent.loop")
SAVE_ON_FAILURE_TIMEOUT = 30.0
"""Seconds a failed or cancelled call may spend saving its input (shielded from cancel)."""
SUPERSEDED = "not run: the user sent new input instead of answering"
_END: dict[str, tuple[str, str]] = {
    GenerateReason.SUSPENDED.value: ("run_suspended", "suspended"),
    GenerateReason.INTERRUPTED.value: ("run_interrupted", "interrupted"),
}


class Execution:
    """The state of one admitted run (the kernel's side of an ``AgentRun``)."""

    def __init__(
        self, agent: Agent, run: AgentRun, user_id: str, session_id: str, fence: Fence | None
    ) -> None:
        self.agent, self.run = agent, run
        self.kernel = agent.kernel
        self.relay = agent.kernel.relay
        self.observers = self.relay.event_callers()
        """Who sees this run's events (a plugin registered meanwhile: from the next run)."""
        self.ctx: RuntimeContext = run.ctx
        self.slot = (user_id, session_id)
        self.fence = fence
        self.version = 0
        self.loaded_len = 0
        self.tools: dict[str, Tool] = {}
        self.load_started_at = 0.0
        self.store_class = ""

    def emit(self, kind: str, /, **data: Any) -> Awaitable[None]:
        """Record a run event; await what this returns (``DONE`` when nobody observes: no
        coroutine for the ten events of a call that nobody watches)."""
        run = self.run
        if not self.observers and run.parent is None:  # nobody sees it now: made when read
            # run.record_raw(kind, data), inlined
            run._events.append((run.event_count, kind, data, time.time(), self.ctx.turn_id))
            run.event_count += 1
            if run._event_added is not None:
                run._wake()
            return DONE
        event = self.agent.record_event(run, kind, data)
        if self.observers:
            return self.relay.deliver(self.observers, event)
        return DONE

    # ------------------------------------------------------------------ the run
    async def execute(self) -> Msg:
        run = self.run
        self.load_started_at = time.time()
        try:
            state = await self.load()
            answers = self.admit(state, run.msgs, run.answers)
            if run.info is not None and run.info.turn_id != self.ctx.turn_id:
                run.info = attrs.evolve(run.info, turn_id=self.ctx.turn_id)  # rare: answers
        except BaseException as exc:
            await self.started()
            await self.failed(exc)  # refused before any input was taken: nothing is saved
            raise
        info = run.info  # started(), inline
        await self.emit("run_started", admitted_at=info.started_at if info else None)
        try:
            await self.loaded(state)
        except BaseException as exc:
            await self.failed(exc)
            raise
        msgs: Sequence[Msg] = run.msgs
        if state.shutdown_interrupted:
            msgs = drop_resent_input(state, msgs)
            state.shutdown_interrupted = False
        if msgs and state.turn_context.pending:  # suspended
            await self.supersede(state)
        input_start = len(state.context)
        state.context.extend(msgs)
        input_end = len(state.context)
        try:
            if answers and not await self.answer(state, answers):
                reply = self.suspended_reply(state)
            else:
                input_end = len(state.context)  # answered results are kept like input
                reply = await self.reason_and_act(state)
        except Interrupted:
            reply = self.recover(state, input_start)
        except BaseException as exc:
            await self.save_failed(state, exc, input_start, input_end)
            raise
        return await self.finish(state, reply)

    def admit(
        self, state: AgentState, msgs: Sequence[Msg], answers: Sequence[Answer]
    ) -> list[tuple[PendingInteraction, Answer]]:
        """Start a turn, or continue the suspended one; refuse bad answers unchanged."""
        turn, ctx = state.turn_context, self.ctx
        if not answers:
            if not msgs:
                raise InvalidMessage("call() needs at least one message, or answers")
            if ctx.turn_id is None or ctx.turn_id == turn.turn_id:
                ctx.turn_id = new_id()  # new input never continues the suspended turn
            return []
        if msgs:
            raise AnswerError("a call carries new input or answers to a suspended turn, not both")
        if not turn.suspended:
            raise UnknownInteraction(
                f"user_id={self.slot[0]!r} session_id={self.slot[1]!r} has no pending "
                "interaction to answer"
            )
        if ctx.turn_id is not None and ctx.turn_id != turn.turn_id:
            raise TurnMismatch(
                f"answers for turn {ctx.turn_id!r}, but the suspended turn is {turn.turn_id!r}"
            )
        pairs = match_answers(turn, answers)
        ctx.turn_id = turn.turn_id
        return pairs

    async def load(self) -> AgentState:
        store = self.kernel._store or await self.kernel.store()  # bound: no await
        self.store_class = type(store).__name__
        cached = self.agent.slot_cache.get(self.slot)
        if cached is not None and not self.kernel.config.reload_each_call:
            state, self.version = cached
        else:
            token = _LOADING.set(self.ctx)  # loading_run_context(): this load only
            try:
                got = await store.get_versioned(*self.slot)
            finally:
                _LOADING.reset(token)
            state = got.state or AgentState(session_id=self.slot[1], user_id=self.slot[0])
            self.version = got.version
        self.loaded_len = n = len(state.context)
        if state.turn_context.pending and step_message(state) is None:  # suspended
            log.warning(
                "session %r: the suspended step is no longer the history's tail; closing it",
                self.slot,
            )
            finish_step(state, {}, "interrupted", "the suspended step was lost")
            state.turn_context = TurnContext()
            n = len(state.context)
        close_open_tool_uses(state, max(0, n - 2))
        object.__setattr__(self.ctx, "agent_state", state)  # what its __setattr__ does
        return state

    async def started(self) -> None:
        """``run_started`` comes after the load (a resumed turn's id is known only then);
        its ``admitted_at`` and ``state_loaded``'s ``load_started_at`` give the real times."""
        info = self.run.info
        await self.emit("run_started", admitted_at=info.started_at if info else None)

    async def loaded(self, state: AgentState) -> None:
        await self.emit(
            "state_loaded",
            version=self.version,
            messages=len(state.context),
            load_started_at=self.load_started_at,
            store=self.store_class,
        )
        await self.kernel.relay.state_loaded(state, self.ctx)

    # ------------------------------------------------------------------ suspension
    async def supersede(self, state: AgentState) -> None:
        """New input while interactions are pending: they are denied, the turn ends."""
        turn = state.turn_context
        for p in turn.pending:
            await self.emit("interaction_resolved", tool_use_id=p.tool_use_id, answer="superseded")
        finish_step(state, {r.id: r for r in turn.results}, "denied", SUPERSEDED)
        state.turn_context = TurnContext()  # that turn is over; the input starts a new one

    async def answer(
        self, state: AgentState, pairs: list[tuple[PendingInteraction, Answer]]
    ) -> bool:
        """Apply the answers; True when the suspended step is complete (results appended)."""
        turn = state.turn_context
        step = step_message(state)
        assert step is not None  # load() closed a step that lost its place
        uses = {u.id: u for u in step.tool_uses}
        self.tools, _ = self.kernel.enabled_tools(state.tool_context.activated_groups)
        approved: list[ToolCall] = []
        for pending, answer in pairs:
            use = uses[pending.tool_use_id]
            await self.emit(
                "interaction_resolved", tool_use_id=use.id, answer=type(answer).__name__
            )
            if isinstance(answer, Approve):
                tool = self.tools.get(use.name)
                approved.append(ToolCall(use, tool, approved=True, remember=answer.remember))
            elif isinstance(answer, Reject):
                self.settle(turn, error_result(use, answer.reason, "denied"))
            elif isinstance(answer, ExternalResult):
                self.settle(turn, answer.result(use.name))
        outcomes: dict[str, Outcome] = {}
        try:
            await run_calls(self, approved, outcomes)
        finally:
            for out in outcomes.values():
                self.settle(turn, out)
        if turn.pending:
            return False
        finish_step(state, {r.id: r for r in turn.results}, "interrupted", "no result")
        return True

    @staticmethod
    def settle(turn: TurnContext, out: Outcome) -> None:
        """Record one answered call: a result is held, a new interaction replaces the old."""
        index = next(
            i
            for i, p in enumerate(turn.pending)
            if p.tool_use_id == (out.tool_use_id if isinstance(out, PendingInteraction) else out.id)
        )
        if isinstance(out, PendingInteraction):
            turn.pending[index] = out
        else:
            del turn.pending[index]
            turn.results.append(out)

    def suspended_reply(self, state: AgentState) -> Msg:
        """What the caller gets back; never written to the history (the model never sees it)."""
        pending = state.turn_context.pending
        lines = "\n".join(f"- {p.tool} ({p.kind}, {p.tool_use_id}): {p.prompt}" for p in pending)
        return Msg.assistant(
            f"Waiting for {len(pending)} answer(s):\n{lines}",
            metadata={
                GENERATE_REASON: GenerateReason.SUSPENDED.value,
                SUSPEND_KIND: suspend_kind(pending).value,
                "turn_id": state.turn_context.turn_id,
                "pending": describe(pending),
            },
        )

    # ------------------------------------------------------------------ reasoning
    async def reason_and_act(self, state: AgentState) -> Msg:
        config = self.kernel.config
        turn = state.turn_context
        iterations = turn.iterations  # a local count: attrs' on_setattr costs a call a set
        while iterations < config.max_iterations:
            iterations += 1
            message = (await ask_model(self, state)).message
            uses = message.tool_uses
            if not uses:
                metadata = {**message.metadata, GENERATE_REASON: GenerateReason.COMPLETED.value}
                reply = Msg(
                    message.role,
                    message.content,
                    message.name,
                    message.id,
                    metadata,
                    message.timestamp,
                )
                state.context.append(reply)
                return reply
            state.context.append(message)
            calls = [ToolCall(u, self.tools.get(u.name)) for u in uses]
            outcomes: dict[str, Outcome] = {}
            try:
                await run_calls(self, calls, outcomes)
            except Interrupted:
                done = {k: v for k, v in outcomes.items() if isinstance(v, ToolResultBlock)}
                state.context.append(
                    Msg(
                        "tool",
                        [
                            done.get(u.id)
                            or error_result(u, "interrupted before it finished", "interrupted")
                            for u in uses
                        ],
                    )
                )
                raise
            results = []
            pending = []
            for u in uses:  # one loop, no comprehensions: a step makes these once
                out = outcomes[u.id]
                results.append(out)
                if type(out) is PendingInteraction:
                    pending.append(out)
            if pending:
                state.turn_context = attrs.evolve(
                    turn,
                    turn_id=self.ctx.turn_id,
                    iterations=iterations,
                    step_id=message.id,
                    pending=pending,
                    results=[o for o in outcomes.values() if isinstance(o, ToolResultBlock)],
                )
                return self.suspended_reply(state)
            state.context.append(Msg("tool", results))  # type: ignore[arg-type]  # no pending
            for r in results:  # all denied? (a loop: no generator per step)
                if r.state != "denied":  # type: ignore[union-attr]
                    break
            else:
                reply = synthetic_reply(
                    "Every tool call of this step was denied; the turn stops here.",
                    GenerateReason.ALL_TOOLS_DENIED,
                )
                state.context.append(reply)
                return reply
        reply = synthetic_reply(
            f"[stopped] No final answer after {config.max_iterations} iterations.",
            GenerateReason.MAX_ITERATIONS,
        )
        state.context.append(reply)
        return reply

    # ------------------------------------------------------------------ endings
    def recover(self, state: AgentState, input_start: int) -> Msg:
        control = self.run.control
        if state.turn_context.suspended:  # interrupted while answering
            results = {r.id: r for r in state.turn_context.results}
            finish_step(state, results, "interrupted", "interrupted before it ran")
        close_open_tool_uses(state, input_start)
        if control.message is not None:
            state.context.append(control.message)
        why = "a shutdown" if control.reason == "shutdown" else "an interrupt"
        reply = synthetic_reply(
            f"[interrupted] The request was stopped by {why} before it finished.",
            GenerateReason.INTERRUPTED,
            interrupt_reason=control.reason,
        )
        state.context.append(reply)
        return reply

    async def finish(self, state: AgentState, reply: Msg) -> Msg:
        reason: str = reply.metadata[GENERATE_REASON]  # a GenerateReason value
        kind, outcome = _END.get(reason, ("run_finished", "success"))
        shutdown = reason == GenerateReason.INTERRUPTED and self.run.control.reason == "shutdown"
        if shutdown:
            state.shutdown_interrupted, outcome = True, "shutdown"
        if reason != GenerateReason.SUSPENDED:
            state.turn_context = TurnContext()
        try:
            await self.persist(state, outcome)
        except BaseException as exc:  # a lost compare-and-set, an unavailable store
            await self.failed(exc)
            raise
        data: dict[str, Any] = {"outcome": reason, "reply_id": reply.id}
        if reason == GenerateReason.SUSPENDED:
            data.update(kind=reply.metadata[SUSPEND_KIND], pending=reply.metadata["pending"])
        elif reason == GenerateReason.INTERRUPTED:
            data["reason"] = self.run.control.reason
        await self.emit(kind, **data)
        return reply

    async def save_failed(
        self, state: AgentState, exc: BaseException, input_start: int, input_end: int
    ) -> None:
        del state.context[input_end:]  # the input stays, partial output goes
        if not state.turn_context.suspended:
            state.turn_context = TurnContext()
        close_open_tool_uses(state, input_start)
        with anyio.move_on_after(SAVE_ON_FAILURE_TIMEOUT, shield=True):
            try:
                await self.persist(state, "error")
            except Exception as save_error:
                exc.add_note(
                    f"hookagent: saving the failed call's input also failed: {save_error!r}"
                )
                exc.__dict__.setdefault("save_error", save_error)
        await self.failed(exc)

    async def failed(self, exc: BaseException) -> None:
        with anyio.CancelScope(shield=True):
            await self.emit(
                "run_failed",
                outcome=GenerateReason.FAILED.value,
                error=f"{type(exc).__name__}: {exc}",
            )

    async def persist(self, state: AgentState, outcome: str) -> None:
        self.version = await persist(
            self.kernel,
            state,
            self.ctx,
            self.slot,
            outcome=outcome,
            version=self.version,
            fence=self.fence,
            loaded_len=self.loaded_len,
        )
        self.agent.slot_cache[self.slot] = (state, self.version)
        await self.emit("state_persisted", version=self.version, outcome=outcome)
