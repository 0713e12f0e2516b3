"""A scripted model for tests: queue responses, then assert the requests it received."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio

from ..context import RuntimeContext
from ..messages import Msg, TextBlock, ToolUseBlock, new_id
from ..models import ModelDelta, ModelRequest, ModelResponse

Step = Msg | str | ModelResponse | BaseException | Callable[[ModelRequest], Any]


def tool_call(name: str, /, **arguments: Any) -> Msg:
    """An assistant message calling one tool."""
    return Msg.assistant([ToolUseBlock(f"call_{new_id()[:12]}", name, arguments)])


class ScriptedModel:
    """Answers each request with the next queued step.

    A step is a reply text, an assistant ``Msg`` (e.g. ``tool_call(...)``), a
    ``ModelResponse``, an exception to raise, or a function of the request returning one of
    those. ``requests`` records what was asked. With ``stream=True`` text is streamed in
    ``chunk``-sized deltas; ``delay`` sleeps before each answer (to test interrupts).
    """

    name = "scripted"

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        stream: bool = False,
        chunk: int = 8,
        delay: float = 0.0,
        default: Step | None = None,
    ) -> None:
        self.steps: list[Step] = list(steps)
        self.requests: list[ModelRequest] = []
        self.default = default
        self.chunk = chunk
        self.delay = delay
        if stream:
            self.stream = self._stream

    def queue(self, *steps: Step) -> ScriptedModel:
        self.steps.extend(steps)
        return self

    @property
    def remaining(self) -> int:
        return len(self.steps)

    def _next(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.steps:
            step = self.steps.pop(0)
        elif self.default is not None:
            step = self.default
        else:
            raise AssertionError(
                f"ScriptedModel has no response queued for request #{len(self.requests)}"
            )
        if callable(step) and not isinstance(step, (Msg, ModelResponse, BaseException)):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return ModelResponse(Msg.assistant([TextBlock(step)]))
        if isinstance(step, Msg):
            return ModelResponse(step)
        return step

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        if self.delay:
            await anyio.sleep(self.delay)
        return self._next(request)

    async def _stream(
        self, request: ModelRequest, ctx: RuntimeContext
    ) -> AsyncIterator[ModelDelta | ModelResponse]:
        response = self._next(request)
        text = response.message.text
        for i in range(0, len(text), self.chunk):
            if self.delay:
                await anyio.sleep(self.delay)
            yield ModelDelta(text=text[i : i + self.chunk])
        yield response

    def assert_all_used(self) -> None:
        assert not self.steps, f"{len(self.steps)} scripted responses were never requested"
