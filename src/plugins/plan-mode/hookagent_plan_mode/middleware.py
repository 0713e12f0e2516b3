"""The two middlewares of plan mode: the system-prompt banner and the tool gate.

Both read the call's ``PlanModeView`` (one context attribute) and step aside at once when
plan mode is off, so a session that never plans pays two dictionary lookups per step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hookagent import REASONING, Agent, RuntimeContext
from hookagent.models import ModelRequest, ModelResponse
from hookagent.relay import Middleware
from hookagent.tools import ToolCall, error_result

from .texts import banner, denial, with_banner
from .view import PlanModeView, current

MODEL_ORDER = 400
"""After memory (100), compaction (200) and task projection (300): the banner is the last
thing added, so a compaction never summarises it away."""
TOOL_ORDER = 100
"""Outside permissions (200): a tool plan mode blocks is denied before anyone is asked."""


async def add_banner(
    request: ModelRequest,
    ctx: RuntimeContext,
    call_next: Callable[[ModelRequest], Awaitable[ModelResponse]],
) -> ModelResponse:
    """While plan mode is active, send the request with the banner on its system prompt.

    A new request (``request.evolve``): the one received is never changed, so a retry outside
    this middleware resends it as it was, and nothing reaches the durable history."""
    view = current(ctx)
    if view is None or request.purpose != REASONING:
        return await call_next(request)
    if view.step_active != view.active:  # a new step: plan_exit's step is over
        view = view.next_step()
        ctx.put(PlanModeView, view)
    if not view.active:
        return await call_next(request)
    offered = any(t.name == "plan_exit" for t in request.tools)
    block = banner(view.options.banner, view.section.current_plan_file, view.inherited, offered)
    return await call_next(request.evolve(system=with_banner(request.system, block)))


async def gate_tools(
    call: ToolCall, ctx: RuntimeContext, call_next: Callable[[ToolCall], Awaitable[Any]]
) -> Any:
    """While plan mode is active, a tool that is neither read-only nor allow-listed gets a
    ``denied`` result saying why and how to leave plan mode (a person's approval does not
    lift it: plan mode is the session's state, not a question)."""
    view = current(ctx)
    if view is None or not view.blocking:
        return await call_next(call)
    known = call.tool is not None
    read_only = call.tool.read_only if call.tool is not None else None
    if view.options.allows(call.use.name, read_only):
        return await call_next(call)
    ended = not view.active  # plan_exit ran earlier in this very step
    text = denial(call.use.name, known, view.inherited, _plan_tools_offered(ctx), ended)
    return error_result(call.use, text, "denied")


def _plan_tools_offered(ctx: RuntimeContext) -> bool:
    """Does this call offer ``plan_exit`` (its group enabled by the configuration or the
    session)? Only asked on a denial; the kernel caches the answer per set of groups."""
    agent, state = ctx.get(Agent), ctx.agent_state
    if agent is None or state is None:
        return False
    tools, _ = agent.kernel.enabled_tools(state.tool_context.activated_groups)
    return "plan_exit" in tools


BANNER = Middleware(add_banner, order=MODEL_ORDER)
GATE = Middleware(gate_tools, order=TOOL_ORDER)
