"""The tool step: every tool call of one model message through the middleware chain.

Calls run one after another, or at the same time (up to ``max_parallel_tool_calls``) when
each tool is ``concurrency_safe`` or ``AgentConfig(parallel_tool_calls=True)``. Each call
ends as a result or as a ``PendingInteraction`` (the turn then suspends); the caller gets
the outcomes keyed by tool_use id and appends results in the model's order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from .errors import AgentError, Interrupted
from .messages import ToolResultBlock
from .runs import _Step
from .state import PendingInteraction
from .tools import ToolArgumentError, ToolCall, error_result, to_output
from .turns import ToolSuspended

if TYPE_CHECKING:
    from .execution import Execution

log = logging.getLogger("hookagent.loop")
Outcome: TypeAlias = ToolResultBlock | PendingInteraction
CallNext = Callable[[ToolCall], Awaitable[Outcome]]
_END_KINDS = {"success": "tool_returned", "denied": "tool_denied"}


def runs_in_parallel(ex: Execution, calls: Sequence[ToolCall]) -> bool:
    if len(calls) < 2:
        return False
    setting = ex.kernel.config.parallel_tool_calls
    if setting is not None:
        return setting
    return all(c.tool is not None and c.tool.concurrency_safe for c in calls)


async def run_calls(ex: Execution, calls: Sequence[ToolCall], outcomes: dict[str, Outcome]) -> None:
    """Run ``calls``, filling ``outcomes`` as each finishes (so that an interrupt leaves the
    finished ones in place); raise ``Interrupted`` after every started call has ended."""
    control = ex.run.control
    if len(calls) < 2 or not runs_in_parallel(ex, calls):
        for call in calls:
            if control.requested:
                control.check()
            outcomes[call.use.id] = await call_tool(ex, call)
            if control.requested:
                control.check()
        return
    limiter = anyio.CapacityLimiter(ex.kernel.config.max_parallel_tool_calls)
    failures: dict[int, Exception] = {}
    interrupted = False

    async def one(index: int, call: ToolCall) -> None:
        nonlocal interrupted
        async with limiter:
            try:
                outcomes[call.use.id] = await call_tool(ex, call)
            except Interrupted:
                interrupted = True
            except Exception as exc:  # re-raised below, the first in the model's order
                failures[index] = exc

    async with anyio.create_task_group() as tg:
        for index, call in enumerate(calls):
            tg.start_soon(one, index, call)
    if failures:
        raise failures[min(failures)]
    if interrupted:
        raise Interrupted(control.reason)


async def call_tool(ex: Execution, call: ToolCall) -> Outcome:
    """One call: events, the middleware chain, the tool; exactly one end event."""
    use = call.use
    if ex.run.control.requested:
        ex.run.control.check()
    await ex.emit("tool_called", tool=use.name, tool_use_id=use.id, approved=call.approved)
    middlewares = ex.kernel.tool_middlewares
    try:
        if middlewares:
            chain: CallNext = lambda c: invoke(ex, c)  # noqa: E731
            for middleware in reversed(middlewares):
                chain = _wrap(middleware, ex.ctx, chain)
            out = await chain(call)
        else:  # no middleware: the innermost link itself
            out = await invoke(ex, call)
    except Interrupted:
        await ex.emit("tool_failed", tool=use.name, tool_use_id=use.id, state="interrupted")
        raise
    if isinstance(out, PendingInteraction):
        if out.tool_use_id != use.id:
            raise AgentError(
                f"a tool middleware suspended tool_use {out.tool_use_id!r} while handling "
                f"{use.id!r}"
            )
        if not (call.approved and out.kind == "confirm"):
            await ex.emit(
                "tool_suspended",
                tool=use.name,
                tool_use_id=use.id,
                kind=out.kind,
                prompt=out.prompt,
            )
            return out
        log.warning(
            "tool %s: a middleware asked again after approval (run %s)", use.name, ex.ctx.run_id
        )
        out = error_result(use, "a middleware asked for confirmation again after approval")
    if not isinstance(out, ToolResultBlock) or out.id != use.id:
        raise AgentError(f"a tool middleware returned {out!r} for tool_use {use.id!r}")
    kind = _END_KINDS.get(out.state, "tool_failed")
    await ex.emit(kind, tool=use.name, tool_use_id=use.id, state=out.state)
    return out


async def invoke(ex: Execution, call: ToolCall) -> Outcome:
    """The innermost link: check the arguments, run the tool (with its timeout)."""
    use, tool = call.use, call.tool
    if tool is None:
        names = ", ".join(sorted(ex.tools)) or "none"
        return error_result(use, f"unknown tool {use.name!r}; available tools: {names}")
    try:
        tool.check_arguments(use.input)
    except ToolArgumentError as exc:
        return error_result(use, f"invalid arguments for {use.name!r}: {exc}")
    try:
        with _Step(ex.run.control):  # control.step()
            if tool.timeout is None:
                value = await tool.invoke(use.input, ex.ctx)
            else:
                with anyio.move_on_after(tool.timeout) as limit:
                    value = await tool.invoke(use.input, ex.ctx)
                if limit.cancelled_caught:
                    return error_result(use, f"tool {use.name!r} timed out after {tool.timeout} s")
        output = to_output(value)
    except Interrupted:
        raise
    except ToolSuspended as pause:
        return PendingInteraction(
            use.id, use.name, "external_result", pause.prompt, dict(use.input), pause.data
        )
    except Exception as exc:
        log.info("tool %s raised %r (run %s)", use.name, exc, ex.ctx.run_id)
        return error_result(use, f"tool {use.name!r} failed: {type(exc).__name__}: {exc}")
    return ToolResultBlock(use.id, use.name, output, "success")


def _wrap(middleware: Any, ctx: Any, call_next: CallNext) -> CallNext:
    async def wrapped(call: ToolCall) -> Outcome:
        return await middleware(call, ctx, call_next)  # type: ignore[no-any-return]

    return wrapped
