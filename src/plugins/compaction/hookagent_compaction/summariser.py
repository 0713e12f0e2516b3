"""Who answers a summary request: a configured model, else the agent's own.

A configured ``summary_model`` is called directly (``generate``: nothing is streamed to
the run's observers). The agent's model is reached through the rest of the model chain
(``call_next``), so that the middlewares inside compaction (telemetry, a failover) see the
summary request too; they leave it unshaped because its purpose is ``"summary"``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hookagent.context import RuntimeContext
from hookagent.errors import ModelError
from hookagent.messages import Msg
from hookagent.models import ModelRequest, ModelResponse

from .compactor import Summarise
from .runtime import Runtime

CallNext = Callable[[ModelRequest], Awaitable[ModelResponse]]


def _checked(response: object, who: str) -> ModelResponse:
    if not isinstance(response, ModelResponse) or not isinstance(response.message, Msg):
        raise ModelError(f"the summary model {who} returned {type(response).__name__}")
    return response


def summariser(rt: Runtime, ctx: RuntimeContext, call_next: CallNext) -> Summarise:
    model = rt.options.summary_model
    if model is None:

        async def through_chain(request: ModelRequest) -> ModelResponse:
            return _checked(await call_next(request), "(the agent's model)")

        return through_chain
    name = repr(getattr(model, "name", type(model).__name__))

    async def direct(request: ModelRequest) -> ModelResponse:
        return _checked(await model.generate(request, ctx), name)

    return direct
