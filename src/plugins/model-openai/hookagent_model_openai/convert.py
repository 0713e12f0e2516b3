"""hookagent messages and tools -> an OpenAI chat-completions request body.

Why a mapping of its own: hookagent keeps tool results as blocks inside a ``tool`` message and
thinking as blocks of the assistant message; the chat-completions wire format wants one
``{"role": "tool", "tool_call_id": ...}`` message per result and never sees thinking.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from hookagent.errors import InvalidMessage
from hookagent.messages import (
    ContentBlock,
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from hookagent.models import ModelRequest, ToolSpec

from .config import check_params

NO_OUTPUT = "(no output)"


def data_mention(block: DataBlock) -> str:
    """How a data reference reads for a model that cannot open it."""
    label = block.name or "data"
    kind = f" ({block.media_type})" if block.media_type else ""
    return f"[{label}{kind}: {block.url}]"


def image_mention(block: ImageBlock) -> str:
    return f"[image: {block.url}]"


def _content(blocks: Iterable[ContentBlock], *, images: bool) -> str | list[dict[str, Any]]:
    """Text, image and data blocks as a string, or as parts when an image must be sent."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            if images:
                parts.append({"type": "image_url", "image_url": {"url": block.url}})
            else:
                parts.append({"type": "text", "text": image_mention(block)})
        elif isinstance(block, DataBlock):
            parts.append({"type": "text", "text": data_mention(block)})
    if any(p["type"] != "text" for p in parts):
        return parts
    return "".join(p["text"] for p in parts)


def tool_result_text(block: ToolResultBlock) -> str:
    """The tool message content: output as text, non-success states said in front."""
    pieces: list[str] = []
    for out in block.output:
        if isinstance(out, TextBlock):
            pieces.append(out.text)
        elif isinstance(out, ImageBlock):
            pieces.append(image_mention(out))
        elif isinstance(out, DataBlock):
            pieces.append(data_mention(out))
    text = "".join(pieces) or NO_OUTPUT
    return text if block.state == "success" else f"[{block.state}] {text}"


def _tool_call(block: ToolUseBlock) -> dict[str, Any]:
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(block.input, ensure_ascii=False)},
    }


def _is_plain(block: ContentBlock) -> bool:
    return isinstance(block, TextBlock | ImageBlock | DataBlock)


def convert_message(msg: Msg) -> list[dict[str, Any]]:
    """One hookagent message as zero or more wire messages."""
    if not isinstance(msg, Msg):
        raise InvalidMessage(f"model request messages must be Msg, got {type(msg).__name__}")
    out: list[dict[str, Any]] = []
    plain = [b for b in msg.content if _is_plain(b)]
    uses = [b for b in msg.content if isinstance(b, ToolUseBlock)]
    results = [b for b in msg.content if isinstance(b, ToolResultBlock)]
    if uses and msg.role != "assistant":
        raise InvalidMessage(
            f"message {msg.id}: tool_use blocks belong to assistant messages, not {msg.role!r}"
        )
    if msg.role == "assistant":
        if plain or uses or not results:  # a thinking-only turn still keeps its place
            wire: dict[str, Any] = {"role": "assistant"}
            text = _content(plain, images=False)
            wire["content"] = text if (text or not uses) else None
            if uses:
                wire["tool_calls"] = [_tool_call(b) for b in uses]
            out.append(wire)
    elif msg.role in ("user", "system"):
        if plain or not results:
            out.append({"role": msg.role, "content": _content(plain, images=msg.role == "user")})
    elif msg.role == "tool":
        if plain:  # text beside the results has no tool_call_id to hang on: say it as the user
            out.append({"role": "user", "content": _content(plain, images=True)})
    else:
        raise InvalidMessage(f"message {msg.id}: unknown role {msg.role!r}")
    for block in results:
        out.append({"role": "tool", "tool_call_id": block.id, "content": tool_result_text(block)})
    return out


def convert_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    wire = []
    for spec in tools:
        if not isinstance(spec, ToolSpec):
            raise InvalidMessage(f"model request tools must be ToolSpec, got {type(spec).__name__}")
        function: dict[str, Any] = {"name": spec.name, "parameters": spec.parameters}
        if spec.description:
            function["description"] = spec.description
        wire.append({"type": "function", "function": function})
    return wire


def build_body(
    request: ModelRequest,
    *,
    model: str,
    defaults: dict[str, Any],
    stream: bool,
    stream_usage: bool,
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions``; request options override defaults."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for msg in request.messages:
        messages.extend(convert_message(msg))
    body: dict[str, Any] = {"model": model, **defaults}
    body.update(check_params(request.options, "request options"))
    body["messages"] = messages
    if request.tools:
        body["tools"] = convert_tools(request.tools)
    if stream:
        body["stream"] = True
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
    return body
