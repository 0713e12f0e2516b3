"""Accumulating streamed ``chat.completion.chunk`` objects into one ``ModelResponse``.

Tool calls arrive as fragments keyed by ``index``: the first carries id and name, the rest
pieces of the ``arguments`` JSON text. They are joined per index and parsed only once the
stream is complete, so a half-received argument string is never mistaken for an error.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from hookagent.errors import MalformedModelResponse, ModelUnavailable
from hookagent.models import ModelDelta, ModelResponse

from .parse import assemble, content_text, make_tool_use, parse_usage, reasoning_of


@attrs.define
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: str = ""
    decoded: dict[str, Any] | None = None  # a server that sends arguments as an object


@attrs.define
class StreamAccumulator:
    """Feed each decoded chunk to ``add``; ``finish`` builds the final response."""

    text: list[str] = attrs.Factory(list)
    thinking: list[str] = attrs.Factory(list)
    calls: dict[int, _PendingCall] = attrs.Factory(dict)
    finish_reason: str | None = None
    usage: dict[str, int] = attrs.Factory(dict)
    model: str | None = None
    saw_choice: bool = False

    def add(self, chunk: Any) -> ModelDelta | None:
        """Take one chunk; return the delta to show, if it carried text or thinking."""
        if not isinstance(chunk, dict):
            raise MalformedModelResponse(
                f"stream chunk is a {type(chunk).__name__}, not a JSON object"
            )
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if chunk.get("usage"):
            self.usage = parse_usage(chunk["usage"])
        choices = chunk.get("choices")
        if choices is None or choices == []:
            return None  # the usage-only chunk, or a keep-alive
        if not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise MalformedModelResponse(f"stream chunk has bad choices: {json.dumps(chunk)[:300]}")
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
        if choice is None:
            return None  # n > 1 is never requested; ignore other choices
        self.saw_choice = True
        if choice.get("finish_reason") is not None:
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if delta is None:
            return None
        if not isinstance(delta, dict):
            raise MalformedModelResponse(f"stream chunk delta is a {type(delta).__name__}")
        text = content_text(delta.get("content"), "stream chunk")
        thinking = reasoning_of(delta)
        calls = delta.get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise MalformedModelResponse("stream chunk: tool_calls is not a list")
            for fragment in calls:
                self._add_call(fragment)
        if text:
            self.text.append(text)
        if thinking:
            self.thinking.append(thinking)
        return ModelDelta(text=text, thinking=thinking) if (text or thinking) else None

    def _slot(self, fragment: dict[str, Any]) -> _PendingCall:
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # servers that omit the index: a new id starts a call, no id continues the last one
            call_id = fragment.get("id")
            known = [i for i, c in self.calls.items() if call_id and c.id == call_id]
            if known:
                index = known[0]
            elif call_id or not self.calls:
                index = max(self.calls, default=-1) + 1
            else:
                index = max(self.calls)
        return self.calls.setdefault(index, _PendingCall())

    def _add_call(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            raise MalformedModelResponse(f"stream chunk: tool call fragment {fragment!r}")
        call = self._slot(fragment)
        if isinstance(fragment.get("id"), str) and fragment["id"] and not call.id:
            call.id = fragment["id"]
        function = fragment.get("function") or {}
        if not isinstance(function, dict):
            raise MalformedModelResponse(f"stream chunk: tool call function {function!r}")
        name = function.get("name")
        if isinstance(name, str) and name and name != call.name:
            call.name = name if not call.name else call.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            call.decoded = arguments
        elif isinstance(arguments, str):
            call.arguments += arguments
        elif arguments is not None:
            raise MalformedModelResponse(
                f"stream chunk: tool call arguments are a {type(arguments).__name__}"
            )

    def finish(self) -> ModelResponse:
        """The final response; a stream that never finished is ``ModelUnavailable``."""
        if not self.saw_choice:
            raise MalformedModelResponse("the stream ended without any choice chunk")
        if self.finish_reason is None:
            raise ModelUnavailable(
                "the stream ended before the model finished (no finish_reason): "
                "the connection was probably cut"
            )
        uses = [
            make_tool_use(c.id, c.name, c.decoded if c.decoded is not None else c.arguments)
            for _, c in sorted(self.calls.items())
        ]
        return assemble(
            "".join(self.text),
            "".join(self.thinking),
            uses,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model,
        )
