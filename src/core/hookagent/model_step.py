"""The model step: build the request, run the around-the-model middleware chain, check the answer.

The chain's innermost link calls the provider (streaming when it can, emitting each delta);
the whole chain runs inside the run's interrupt scope, so an interrupt aborts a retry's
back-off or a failover just as it aborts the stream itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .errors import Interrupted, ModelError
from .messages import Msg
from .models import REASONING, ModelDelta, ModelRequest, ModelResponse
from .runs import _Step
from .state import AgentState

if TYPE_CHECKING:
    from .execution import Execution

CallNext = Callable[[ModelRequest], Awaitable[ModelResponse]]


def model_name(model: Any) -> str:
    return repr(getattr(model, "name", type(model).__name__))


def _failed(model: object, exc: Exception) -> ModelError:
    """What a provider's own exception becomes (the chain's innermost link and the
    chainless call say the same)."""
    return ModelError(f"model {model_name(model)} failed: {type(exc).__name__}: {exc}")


async def ask_model(ex: Execution, state: AgentState) -> ModelResponse:
    """One inference: request shaping hooks, then the middleware chain, then checks."""
    kernel = ex.kernel
    model = kernel.model
    if model is None:
        raise ModelError("no model is configured (AgentConfig(model=...))")
    control = ex.run.control
    if control.requested:
        control.check()
    ex.tools, specs = kernel.enabled_tools(state.tool_context.activated_groups)
    # the history shared, not copied: a shaper's change copies the view (copy-on-write)
    request = ModelRequest(
        messages=state.context.view(), tools=list(specs), system=kernel.config.system_prompt
    )
    await kernel.relay.build_model_request(request, ex.ctx)
    await ex.emit("model_requested", messages=len(request.messages))

    middlewares = kernel.model_middlewares
    if not middlewares and getattr(model, "stream", None) is None:
        # no chain and no stream: the innermost link's own work, without its closure
        with _Step(control):  # control.step()
            try:
                response = await model.generate(request, ex.ctx)
            except (ModelError, Interrupted):
                raise
            except Exception as exc:
                raise _failed(model, exc) from exc
    else:

        async def call_model(req: ModelRequest) -> ModelResponse:
            response: Any = None
            # a plugin's own request through the chain (a summary) streams for the interrupt
            # checkpoints, but its text is not the reply: no model_delta events for it
            deltas = req.purpose == REASONING
            try:
                stream = getattr(model, "stream", None)
                if stream is not None:
                    # aclosing: an interrupt mid-stream releases the provider's connection now
                    async with aclosing(stream(req, ex.ctx)) as chunks:
                        async for item in chunks:
                            if isinstance(item, ModelDelta):
                                if deltas:
                                    await ex.emit(
                                        "model_delta", text=item.text, thinking=item.thinking
                                    )
                                control.check()
                            else:
                                response = item
                else:
                    response = await model.generate(req, ex.ctx)
            except (ModelError, Interrupted):
                raise
            except Exception as exc:
                raise _failed(model, exc) from exc
            return response  # type: ignore[no-any-return]  # checked once, after the chain

        chain: CallNext = call_model
        for middleware in reversed(middlewares):
            chain = _wrap(middleware, ex.ctx, chain)
        with _Step(control):  # control.step()
            response = await chain(request)
    if (
        type(response) is not ModelResponse
        or type(response.message) is not Msg
        or response.message.role != "assistant"
    ):  # the exact classes and the right role pass without a call
        response = check_response(model, response)
    await ex.emit(
        "model_responded",
        message_id=response.message.id,
        tool_calls=len(response.message.tool_uses),
        stop_reason=response.stop_reason,
    )
    if control.requested:  # after the model call: an interrupt now drops this response
        control.check()
    return response


def check_response(model: Any, response: Any) -> ModelResponse:
    if not isinstance(response, ModelResponse) or not isinstance(response.message, Msg):
        raise ModelError(
            f"model {model_name(model)} returned {type(response).__name__}, not a ModelResponse"
        )
    if response.message.role != "assistant":
        raise ModelError(f"model {model_name(model)} answered with role {response.message.role!r}")
    return response


def _wrap(middleware: Any, ctx: Any, call_next: CallNext) -> CallNext:
    async def wrapped(request: ModelRequest) -> ModelResponse:
        return await middleware(request, ctx, call_next)  # type: ignore[no-any-return]

    return wrapped
