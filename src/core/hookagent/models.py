"""The model contract: a request in, a response (or a stream ending in one) out.

A provider is any object with ``async generate(request, ctx) -> ModelResponse``. One that
can stream also has ``stream(request, ctx)``: an async iterator of ``ModelDelta`` items
ending with the final ``ModelResponse``. The kernel streams when it can, so its interrupt
checkpoints see every chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableSequence
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


REASONING = "reasoning"
"""``ModelRequest.purpose`` of the loop's own requests (the only ones shapers change)."""

SUMMARY = "summary"
"""``ModelRequest.purpose`` of a compaction summary request."""


@attrs.define
class ModelRequest:
    """One inference's input; ``hookagent_build_model_request`` may change it in place.

    The loop's own requests carry the history as a ``HistoryView``: a snapshot that shares
    the history's messages (no copy per request) and copies itself on its first change, so
    a shaper that inserts or replaces messages never changes the history. Any other
    mutable sequence of messages (a plain list) is a request's messages too.

    ``purpose`` tells request-shaping plugins the loop's own requests (``"reasoning"``)
    from the ones plugins make (``"summary"``, or a plugin's own string): a shaper leaves
    the others alone. A model middleware never mutates the request it was given (a retry
    outside it passes the same one again): it passes ``request.evolve(...)`` on.
    """

    messages: MutableSequence[Msg]
    tools: list[ToolSpec] = attrs.Factory(list)
    system: str | None = None
    options: dict[str, Any] = attrs.Factory(dict)
    purpose: str = REASONING

    def evolve(self, **changes: Any) -> ModelRequest:
        """A copy with ``changes``. What is not replaced is shared with this request (no
        copy of a long history per shaper): give new lists, never mutate the shared ones."""
        return attrs.evolve(self, **changes)


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
    """A provider. It may also declare ``context_window: int`` (its window in tokens,
    ``kernel.context_window``), which budgeting plugins use when no option says otherwise."""

    name: str

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse: ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    def stream(
        self, request: ModelRequest, ctx: RuntimeContext
    ) -> AsyncIterator[ModelDelta | ModelResponse]: ...
