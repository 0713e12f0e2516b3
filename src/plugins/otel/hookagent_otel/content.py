"""Messages as GenAI semantic-convention JSON (only ever called when content is opted in)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hookagent.messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)


def _part(block: object) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "content": block.text}
    if isinstance(block, ThinkingBlock):
        return {"type": "reasoning", "content": block.thinking}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
    if isinstance(block, ToolResultBlock):
        return {"type": "tool_call_response", "id": block.id, "response": block.text}
    if isinstance(block, ImageBlock | DataBlock):
        return {"type": "uri", "uri": block.url, "mime_type": block.media_type}
    return {"type": type(block).__name__}


def messages_json(messages: Iterable[Msg], limit: int) -> str:
    """``[{"role", "parts": [...]}, ...]``, cut to ``limit`` characters."""
    data = [{"role": m.role, "parts": [_part(b) for b in m.content]} for m in messages]
    return clip(json.dumps(data, ensure_ascii=False, default=str), limit)


def value_json(value: Any, limit: int) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str), limit)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
