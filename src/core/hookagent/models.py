"""The model contract: a request in, a response (or a stream ending in one) out.

A provider is any object with ``async generate(request, ctx) -> ModelResponse``. One that
can stream also has ``stream(request, ctx)``: an async iterator of ``ModelDelta`` items
ending with the final ``ModelResponse``. The kernel streams when it can, so its interrupt
checkpoints see every chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from .messages import Msg

if TYPE_CHECKING:
    from .context import RuntimeContext


@attrs.frozen
class ToolSpec:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]


@attrs.define
class ModelRequest:
    """One inference's input; ``hookagent_build_model_request`` may change it in place."""

    messages: list[Msg]
    tools: list[ToolSpec] = attrs.Factory(list)
    system: str | None = None
    options: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
class ModelResponse:
    """The model's answer: an assistant message, with tool_use blocks when it calls tools."""

    message: Msg
    usage: dict[str, int] = attrs.Factory(dict)
    stop_reason: str | None = None


@attrs.frozen
class ModelDelta:
    """A streamed increment of text (or thinking), not the text so far; never stored."""

    text: str = ""
    thinking: str = ""


@runtime_checkable
class Model(Protocol):
    name: str

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse: ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    def stream(
        self, request: ModelRequest, ctx: RuntimeContext
    ) -> AsyncIterator[ModelDelta | ModelResponse]: ...
