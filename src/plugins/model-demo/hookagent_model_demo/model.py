"""``DemoModel``: the offline provider registered as ``demo``. It streams word by word."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
from hookagent.context import RuntimeContext
from hookagent.errors import ModelError
from hookagent.messages import ContentBlock, Msg, TextBlock, ToolUseBlock
from hookagent.models import REASONING, ModelDelta, ModelRequest, ModelResponse

from .digest import digest
from .rules import decide, tool_use_id

_WORDS = re.compile(r"\S+\s*|\s+")


class DemoModel:
    """A deterministic, rule-based stand-in for an LLM (see ``rules.py``); never a real model.

    ``delay`` is the pause before each streamed chunk (seconds), so that a demo can show
    streaming and interrupt a reply while it is being written; ``stream=False`` answers in
    one piece (one delta, no pause), like the openai provider's option of that name.
    ``context_window`` is the window it declares (tokens), which budgeting plugins read.
    A request whose purpose is not ``"reasoning"`` (a compaction summary request) gets a
    deterministic digest of its text (``digest.py``), labelled ``[demo summary]``.
    """

    name = "demo"

    def __init__(
        self,
        delay: float = 0.02,
        chunk_words: int = 2,
        stream: bool = True,
        context_window: int = 32_768,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise ModelError(
                f"model 'demo' got unknown option(s) {', '.join(sorted(unknown))}; "
                "known: delay, chunk_words, stream, context_window"
            )
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 5:
            raise ModelError(
                f"model 'demo': delay must be a number of seconds in [0, 5], got {delay!r}"
            )
        if isinstance(chunk_words, bool) or not isinstance(chunk_words, int) or chunk_words < 1:
            raise ModelError(f"model 'demo': chunk_words must be an int >= 1, got {chunk_words!r}")
        if not isinstance(stream, bool):
            raise ModelError(f"model 'demo': stream must be True or False, got {stream!r}")
        if (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or context_window < 1
        ):
            raise ModelError(
                f"model 'demo': context_window must be an int >= 1, got {context_window!r}"
            )
        self.context_window = context_window
        self.delay = float(delay)
        self.chunk_words = chunk_words
        self.streams = stream

    def _respond(self, request: ModelRequest) -> ModelResponse:
        if request.purpose != REASONING:
            text = digest("\n".join(m.text for m in request.messages))
            return ModelResponse(
                Msg.assistant(text, metadata={"model": "demo", "purpose": request.purpose}),
                usage={"output_words": len(text.split())},
                stop_reason="end_turn",
            )
        plan = decide(request.messages, [t.name for t in request.tools], request.system)
        content: list[ContentBlock] = [TextBlock(plan.text)]
        if plan.tool is not None:
            content.append(ToolUseBlock(tool_use_id(request.messages), plan.tool, plan.arguments))
        words_in = sum(len(m.text.split()) for m in request.messages)
        return ModelResponse(
            Msg.assistant(content, metadata={"model": "demo"}),
            usage={"input_words": words_in, "output_words": len(plan.text.split())},
            stop_reason="tool_use" if plan.tool else "end_turn",
        )

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        return self._respond(request)

    async def stream(
        self, request: ModelRequest, ctx: RuntimeContext
    ) -> AsyncIterator[ModelDelta | ModelResponse]:
        response = self._respond(request)
        if not self.streams:  # stream=False: the whole answer at once, as the openai provider
            if response.message.text:
                yield ModelDelta(text=response.message.text)
            yield response
            return
        words = _WORDS.findall(response.message.text)
        for i in range(0, len(words), self.chunk_words):
            if self.delay:
                await anyio.sleep(self.delay)
            yield ModelDelta(text="".join(words[i : i + self.chunk_words]))
        yield response

    async def aclose(self) -> None:
        """Nothing to release (no connection); present so hosts can close every model alike."""
