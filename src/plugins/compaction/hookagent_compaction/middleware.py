"""The model middleware (order 200): trigger, compact, and recover from a context overflow.

For a reasoning request: project it through the run's accepted compaction; if it reaches a
trigger, compact (once per run after a refusal); if a refused compaction leaves it over the
model's declared window, fail with ``ContextBudgetExceeded``. If the provider answers
``ContextLengthExceeded``, compact once (forced, even under the triggers) and retry once.
Requests of any other purpose (a summary request included) pass through untouched.
"""

from __future__ import annotations

from hookagent import REASONING
from hookagent.context import RuntimeContext
from hookagent.errors import ContextLengthExceeded
from hookagent.models import ModelRequest, ModelResponse
from hookagent.relay import Middleware

from .compactor import RunCompaction, compact, run_compaction
from .errors import ContextBudgetExceeded
from .runtime import Runtime, runtime_for
from .summariser import CallNext, summariser

MODEL_ORDER = 200


async def compaction_middleware(
    request: ModelRequest, ctx: RuntimeContext, call_next: CallNext
) -> ModelResponse:
    if request.purpose != REASONING:
        return await call_next(request)
    rt = runtime_for(ctx)
    state = ctx.agent_state
    if rt is None or state is None or not rt.options.enabled:
        return await call_next(request)
    run = run_compaction(ctx, state)
    view = run.project(request)
    tokens = rt.count(view.messages, view.system)
    tried = False
    why = rt.trigger(len(view.messages), tokens)
    if why is not None and run.refused is None:
        tried = True
        if await _compact(rt, ctx, run, call_next, why, view, tokens):
            view = run.project(request)
            tokens = rt.count(view.messages, view.system)
    if run.refused is not None and not rt.fits(tokens):
        raise ContextBudgetExceeded(tokens, rt.window, run.refused)
    try:
        return await call_next(view)
    except ContextBudgetExceeded:
        raise
    except ContextLengthExceeded as exc:
        if tried and run.refused is not None:
            raise ContextBudgetExceeded(tokens, None, run.refused) from exc
        if not await _compact(rt, ctx, run, call_next, "overflow", view, tokens):
            raise ContextBudgetExceeded(tokens, None, run.refused or "refused") from exc
    view = run.project(request)
    return await call_next(view)  # the one retry: a second overflow is the caller's


async def _compact(
    rt: Runtime,
    ctx: RuntimeContext,
    run: RunCompaction,
    call_next: CallNext,
    why: str,
    view: ModelRequest,
    tokens: int,
) -> bool:
    pending = await compact(
        rt,
        ctx,
        run,
        summariser(rt, ctx, call_next),
        why=why,
        before_messages=len(view.messages),
        before_tokens=tokens,
    )
    return pending is not None


MIDDLEWARE = Middleware(compaction_middleware, order=MODEL_ORDER)
