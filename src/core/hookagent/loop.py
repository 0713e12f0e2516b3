"""One turn of the ReAct loop: load, reason and act, persist. Called under the session gate.

Invariant kept on every path that saves: every tool_use in the history has a tool_result
with the same id. A failed turn saves the user's input without partial output; an
interrupted one closes open tool calls as ``interrupted`` and appends a recovery reply.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import anyio

from .errors import (
    AgentError,
    IterationLimitReached,
    ModelError,
    VersionConflict,
)
from .kernel import ToolCall, await_results
from .messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from .models import ModelDelta, ModelRequest, ModelResponse
from .runs import AgentRun, Interrupted
from .state import AgentState
from .store.base import UNCONDITIONAL, ConflictPolicy, Fence
from .tools import Tool, ToolArgumentError, error_result, to_output

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RuntimeContext

log = logging.getLogger("hookagent.loop")
GENERATE_REASON = "generate_reason"
SAVE_ON_FAILURE_TIMEOUT = 30.0
"""Seconds a failed or cancelled call may spend saving its input (shielded from cancel)."""


class Turn:
    """The state of one admitted execution."""

    def __init__(
        self, agent: Agent, run: AgentRun, user_id: str, session_id: str, fence: Fence | None
    ) -> None:
        self.agent, self.run = agent, run
        self.kernel = agent.kernel
        self.ctx: RuntimeContext = run.ctx
        self.user_id, self.session_id, self.fence = user_id, session_id, fence
        self.state: AgentState | None = None
        self.version = 0
        self.loaded_len = 0
        self.tools: dict[str, Tool] = {}

    # ------------------------------------------------------------------ events
    async def emit(self, kind: str, **data: Any) -> None:
        await self.agent._emit(self.run, kind, self.user_id, self.session_id, data)

    # ------------------------------------------------------------------ the turn
    async def execute(self, msgs: Sequence[Msg]) -> Msg:
        """The whole turn; whatever happens, exactly one end event is emitted."""
        try:
            state = await self.load()
        except BaseException as exc:
            await self.failed(exc)  # refused before any input was taken: nothing is saved
            raise
        control = self.run.control
        input_start = len(state.context)
        if state.shutdown_interrupted:
            msgs = _drop_resent_input(state, msgs)
            state.shutdown_interrupted = False
        state.context.extend(msgs)
        input_end = len(state.context)
        try:
            reply = await self.reason_and_act(state)
            outcome = "success"
        except Interrupted:
            reply = self.recover(state, input_start)
            outcome = "shutdown" if control.reason == "shutdown" else "interrupted"
        except BaseException as exc:
            del state.context[input_end:]  # the input stays, partial output goes
            _close_open_tool_uses(state, input_start)
            with anyio.move_on_after(SAVE_ON_FAILURE_TIMEOUT, shield=True):
                try:
                    await self.persist(state, "error")
                except Exception as save_error:
                    exc.add_note(
                        f"hookagent: saving the failed call's input also failed: {save_error!r}"
                    )
                    exc.__dict__.setdefault("save_error", save_error)
            await self.failed(exc)
            raise
        if outcome == "shutdown":
            state.shutdown_interrupted = True
        try:
            await self.persist(state, outcome)
        except BaseException as exc:  # a lost compare-and-set, an unavailable store
            await self.failed(exc)
            raise
        if outcome == "success":
            await self.emit("run_finished", reply_id=reply.id)
        else:
            await self.emit("run_interrupted", reason=control.reason, reply_id=reply.id)
        return reply

    async def failed(self, exc: BaseException) -> None:
        with anyio.CancelScope(shield=True):
            await self.emit("run_failed", error=f"{type(exc).__name__}: {exc}")

    async def load(self) -> AgentState:
        store = await self.kernel.store()
        cached = self.agent._slot_cache.get((self.user_id, self.session_id))
        if cached is not None and not self.kernel.config.reload_each_call:
            state, self.version = cached
        else:
            got = await store.get_versioned(self.user_id, self.session_id)
            state = got.state or AgentState(session_id=self.session_id, user_id=self.user_id)
            self.version = got.version
        self.state = state
        self.loaded_len = len(state.context)
        _close_open_tool_uses(state, max(0, len(state.context) - 2))
        self.ctx.agent_state = state
        await self.emit("state_loaded", version=self.version, messages=len(state.context))
        await await_results(
            self.kernel.pm.hook.hookagent_state_loaded(state=state, ctx=self.ctx),
            "hookagent_state_loaded",
        )
        return state

    # ------------------------------------------------------------------ reasoning
    async def reason_and_act(self, state: AgentState) -> Msg:
        config = self.kernel.config
        for _ in range(config.max_iterations):
            response = await self.ask_model(state)
            message = response.message
            state.context.append(message)
            uses = message.tool_uses
            if not uses:
                return message
            await self.act(state, uses)
        raise IterationLimitReached(
            f"no final answer after {config.max_iterations} iterations "
            f"(user_id={self.user_id!r} session_id={self.session_id!r})"
        )

    async def ask_model(self, state: AgentState) -> ModelResponse:
        model = self.kernel.model
        if model is None:
            raise ModelError("no model is configured (AgentConfig(model=...))")
        control = self.run.control
        control.check()
        self.tools, specs = self.kernel.enabled_tools(state.tool_context.activated_groups)
        request = ModelRequest(
            messages=list(state.context),
            tools=list(specs),
            system=self.kernel.config.system_prompt,
        )
        await await_results(
            self.kernel.pm.hook.hookagent_build_model_request(request=request, ctx=self.ctx),
            "hookagent_build_model_request",
        )
        await self.emit("model_requested", messages=len(request.messages))
        response: Any = None
        with control.step():
            try:
                stream = getattr(model, "stream", None)
                if stream is not None:
                    # aclosing: an interrupt mid-stream releases the provider's connection now
                    async with aclosing(stream(request, self.ctx)) as chunks:
                        async for item in chunks:
                            if isinstance(item, ModelDelta):
                                await self.emit(
                                    "model_delta", text=item.text, thinking=item.thinking
                                )
                                control.check()
                            else:
                                response = item
                else:
                    response = await model.generate(request, self.ctx)
            except (ModelError, Interrupted):
                raise
            except Exception as exc:
                raise ModelError(
                    f"model {_name(model)} failed: {type(exc).__name__}: {exc}"
                ) from exc
        if not isinstance(response, ModelResponse) or not isinstance(response.message, Msg):
            raise ModelError(
                f"model {_name(model)} returned {type(response).__name__}, not a ModelResponse"
            )
        if response.message.role != "assistant":
            raise ModelError(f"model {_name(model)} answered with role {response.message.role!r}")
        await self.emit(
            "model_responded",
            message_id=response.message.id,
            tool_calls=len(response.message.tool_uses),
            stop_reason=response.stop_reason,
        )
        control.check()  # after the model call: an interrupt now drops this response
        return response

    async def act(self, state: AgentState, uses: Sequence[ToolUseBlock]) -> None:
        results: list[ToolResultBlock] = []
        try:
            for use in uses:
                self.run.control.check()
                results.append(await self.call_tool(use))
                self.run.control.check()
        except Interrupted:
            done = {r.id for r in results}
            results += [
                error_result(u, "interrupted before it finished", "interrupted")
                for u in uses
                if u.id not in done
            ]
            state.context.append(Msg("tool", results))
            raise
        state.context.append(Msg("tool", results))

    async def call_tool(self, use: ToolUseBlock) -> ToolResultBlock:
        tool = self.tools.get(use.name)
        await self.emit("tool_called", tool=use.name, tool_use_id=use.id)
        chain: Callable[[ToolCall], Awaitable[ToolResultBlock]] = self._invoke
        for middleware in reversed(self.kernel.middlewares):
            chain = _wrap(middleware, self.ctx, chain)
        result = await chain(ToolCall(use, tool))
        if not isinstance(result, ToolResultBlock) or result.id != use.id:
            raise AgentError(f"a tool middleware returned {result!r} for tool_use {use.id!r}")
        kind = {"success": "tool_returned", "denied": "tool_denied"}.get(
            result.state, "tool_failed"
        )
        await self.emit(kind, tool=use.name, tool_use_id=use.id, state=result.state)
        return result

    async def _invoke(self, call: ToolCall) -> ToolResultBlock:
        use, tool = call.use, call.tool
        if tool is None:
            names = ", ".join(sorted(self.tools)) or "none"
            return error_result(use, f"unknown tool {use.name!r}; available tools: {names}")
        try:
            tool.check_arguments(use.input)
        except ToolArgumentError as exc:
            return error_result(use, f"invalid arguments for {use.name!r}: {exc}")
        try:
            with self.run.control.step():
                value = await tool.invoke(use.input, self.ctx)
            output = to_output(value)
        except Interrupted:
            raise
        except Exception as exc:
            log.info("tool %s raised %r (run %s)", use.name, exc, self.ctx.run_id)
            return error_result(use, f"tool {use.name!r} failed: {type(exc).__name__}: {exc}")
        return ToolResultBlock(use.id, use.name, output, "success")

    # ------------------------------------------------------------------ recovery and saving
    def recover(self, state: AgentState, input_start: int) -> Msg:
        control = self.run.control
        _close_open_tool_uses(state, input_start)
        if control.message is not None:
            state.context.append(control.message)
        why = "shutdown" if control.reason == "shutdown" else "interrupt"
        reply = Msg.assistant(
            f"[interrupted by {why}] The previous request was stopped before it finished.",
            metadata={GENERATE_REASON: "INTERRUPTED", "interrupt_reason": control.reason},
        )
        state.context.append(reply)
        return reply

    async def persist(self, state: AgentState, outcome: str) -> int:
        hook = self.kernel.pm.hook
        await await_results(
            hook.hookagent_before_persist(state=state, ctx=self.ctx, outcome=outcome),
            "hookagent_before_persist",
        )
        version = await self.save(state)
        self.agent._slot_cache[(self.user_id, self.session_id)] = (state, version)
        await self.emit("state_persisted", version=version, outcome=outcome)
        await await_results(
            hook.hookagent_after_persist(state=state, ctx=self.ctx, version=version),
            "hookagent_after_persist",
        )
        return version

    async def save(self, state: AgentState) -> int:
        store = await self.kernel.store()
        policy = self.kernel.config.conflict_policy
        u, s, fence = self.user_id, self.session_id, self.fence
        try:
            self.version = await store.save_if_version(u, s, state, self.version, fence=fence)
            return self.version
        except VersionConflict:
            if policy is ConflictPolicy.FAIL:
                raise
        if policy is ConflictPolicy.OVERWRITE:
            self.version = await store.save_if_version(u, s, state, UNCONDITIONAL, fence=fence)
            return self.version
        fresh = await store.get_versioned(u, s)
        merged = fresh.state or AgentState(session_id=s, user_id=u)
        merged.context.extend(state.context[self.loaded_len :])
        self.version = await store.save_if_version(u, s, merged, fresh.version, fence=fence)
        state.context.replace(merged.context)
        state.context.mark_committed()
        return self.version


def _name(model: Any) -> str:
    return repr(getattr(model, "name", type(model).__name__))


def _wrap(
    middleware: Any,
    ctx: RuntimeContext,
    call_next: Callable[[ToolCall], Awaitable[ToolResultBlock]],
) -> Callable[[ToolCall], Awaitable[ToolResultBlock]]:
    async def wrapped(call: ToolCall) -> ToolResultBlock:
        return await middleware(call, ctx, call_next)  # type: ignore[no-any-return]

    return wrapped


def _close_open_tool_uses(state: AgentState, start: int) -> None:
    """Give every tool_use after ``start`` without a result an ``interrupted`` result."""
    history = state.context
    open_uses: dict[str, ToolUseBlock] = {}
    for msg in history[start:]:
        for block in msg.content:
            if isinstance(block, ToolUseBlock):
                open_uses[block.id] = block
            elif isinstance(block, ToolResultBlock):
                open_uses.pop(block.id, None)
    if open_uses:
        history.append(
            Msg(
                "tool",
                [
                    error_result(u, "no result was recorded", "interrupted")
                    for u in open_uses.values()
                ],
            )
        )


def _drop_resent_input(state: AgentState, msgs: Sequence[Msg]) -> Sequence[Msg]:
    """After a shutdown interrupt, a client re-sending the interrupted input is not duplicated."""
    last_user = next((m for m in reversed(state.context) if m.role == "user"), None)
    if last_user is None or not msgs:
        return msgs
    first = msgs[0]
    if first.id == last_user.id or (first.role == "user" and first.content == last_user.content):
        tail = state.context[-1] if state.context else None
        if tail is not None and tail.metadata.get("interrupt_reason") == "shutdown":
            state.context.pop()  # the model continues the original request instead
        return msgs[1:]
    return msgs


def text_reply(text: str) -> Msg:
    return Msg.assistant([TextBlock(text)])
