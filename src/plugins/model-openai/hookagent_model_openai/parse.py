"""Chat-completions answers (whole or streamed) -> hookagent ``ModelResponse``.

Works on plain decoded JSON, never trusting its shape: anything that is not a usable answer is
a ``MalformedModelResponse`` that says what was wrong. Tolerates what compatible servers really
send: missing tool-call ids (one is made up), ``arguments`` already decoded, ``""`` arguments
for a tool without parameters, ``reasoning_content``/``reasoning`` for thinking.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hookagent.errors import MalformedModelResponse
from hookagent.messages import ContentBlock, Msg, TextBlock, ThinkingBlock, ToolUseBlock
from hookagent.models import ModelResponse

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def stop_reason(finish_reason: Any, has_tool_calls: bool) -> str | None:
    """hookagent's stop reason; tool calls win over whatever the server said."""
    if has_tool_calls:
        return "tool_use"
    if finish_reason is None:
        return None
    return STOP_REASONS.get(str(finish_reason), str(finish_reason))


def parse_usage(usage: Any) -> dict[str, int]:
    """Token counts under provider-neutral names; anything that is not an int is dropped."""
    if not isinstance(usage, dict):
        return {}
    out: dict[str, int] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[name] = value

    put("input_tokens", usage.get("prompt_tokens"))
    put("output_tokens", usage.get("completion_tokens"))
    put("total_tokens", usage.get("total_tokens"))
    prompt_details = usage.get("prompt_tokens_details")
    if isinstance(prompt_details, dict):
        put("cached_input_tokens", prompt_details.get("cached_tokens"))
    completion_details = usage.get("completion_tokens_details")
    if isinstance(completion_details, dict):
        put("reasoning_tokens", completion_details.get("reasoning_tokens"))
    return out


def content_text(value: Any, what: str) -> str:
    """Message content: a string, null, or a list of text parts (some servers send that)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part, str):
                pieces.append(part)
            else:
                raise MalformedModelResponse(f"{what}: content part {part!r} has no text")
        return "".join(pieces)
    raise MalformedModelResponse(f"{what}: content is a {type(value).__name__}, not a string")


def reasoning_of(obj: dict[str, Any]) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = obj.get(key)
        if isinstance(value, str):
            return value
    return ""


def parse_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as a JSON object, or ``MalformedModelResponse``."""
    if isinstance(arguments, dict):
        return arguments
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if not isinstance(arguments, str):
        raise MalformedModelResponse(
            f"tool call {name!r}: arguments are a {type(arguments).__name__}, not a JSON string"
        )
    try:
        value = json.loads(arguments)
    except ValueError as exc:
        raise MalformedModelResponse(
            f"tool call {name!r}: arguments are not valid JSON ({exc}): {arguments[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedModelResponse(
            f"tool call {name!r}: arguments must be a JSON object, got {type(value).__name__}"
        )
    return value


def make_tool_use(call_id: Any, name: Any, arguments: Any) -> ToolUseBlock:
    if not isinstance(name, str) or not name:
        raise MalformedModelResponse(f"tool call without a function name: {name!r}")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{uuid.uuid4().hex}"
    return ToolUseBlock(id=call_id, name=name, input=parse_arguments(name, arguments))


def assemble(
    text: str,
    thinking: str,
    tool_uses: list[ToolUseBlock],
    *,
    finish_reason: Any,
    usage: dict[str, int],
    model: Any,
) -> ModelResponse:
    content: list[ContentBlock] = []
    if thinking:
        content.append(ThinkingBlock(thinking))
    if text:
        content.append(TextBlock(text))
    content.extend(tool_uses)
    metadata = {"model": model} if isinstance(model, str) and model else {}
    return ModelResponse(
        message=Msg.assistant(content, metadata=metadata),
        usage=usage,
        stop_reason=stop_reason(finish_reason, bool(tool_uses)),
    )


def first_choice(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise MalformedModelResponse(f"{what} is a {type(data).__name__}, not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedModelResponse(f"{what} has no choices: {json.dumps(data)[:300]}")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedModelResponse(f"{what}: choice is a {type(choice).__name__}")
    return choice


def parse_completion(data: Any) -> ModelResponse:
    """A whole (non-streamed) ``chat.completion`` object."""
    choice = first_choice(data, "chat completion")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedModelResponse("chat completion choice has no message object")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise MalformedModelResponse("chat completion: tool_calls is not a list")
    uses = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise MalformedModelResponse(f"chat completion: tool call {call!r} has no function")
        uses.append(make_tool_use(call.get("id"), function.get("name"), function.get("arguments")))
    return assemble(
        content_text(message.get("content"), "chat completion"),
        reasoning_of(message),
        uses,
        finish_reason=choice.get("finish_reason"),
        usage=parse_usage(data.get("usage")),
        model=data.get("model"),
    )
