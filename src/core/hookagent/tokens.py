"""Counting tokens: one counter per configuration, shared by every plugin that budgets.

Memory, compaction and any other plugin that keeps a request within a budget must agree on
what a token is, so the kernel holds the counter: a plugin may provide one through
``hookagent_token_counter`` (a tokenizer for the configured model); without one the kernel
estimates ``chars / 4``, the reference's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

import orjson

from .messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

TokenCounter: TypeAlias = Callable[[str], int]
"""``(text) -> tokens``: what ``hookagent_token_counter`` returns."""

MESSAGE_OVERHEAD = 4
"""Tokens a message costs beyond its content (role and separators), as providers count."""

REFERENCE_TOKENS = 16
"""An image or data block by reference: its URL and a placeholder, not its bytes."""


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the default when no plugin provides a tokenizer."""
    return (len(text) + 3) // 4


def message_text(msg: Msg) -> str:
    """What a message puts in front of the model, as text to count."""
    parts: list[str] = []
    for block in msg.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            parts.append(block.thinking)
        elif isinstance(block, ToolUseBlock):
            parts.append(block.name)
            parts.append(orjson.dumps(block.input, option=orjson.OPT_NON_STR_KEYS).decode())
        elif isinstance(block, ToolResultBlock):
            parts.append(block.name)
            parts.extend(b.text for b in block.output if isinstance(b, TextBlock))
    return "\n".join(parts)


def count_messages(
    messages: Iterable[Msg], counter: TokenCounter, system: str | None = None
) -> int:
    """Tokens of a request's messages (and system prompt) under ``counter``."""
    total = counter(system) + MESSAGE_OVERHEAD if system else 0
    for msg in messages:
        total += counter(message_text(msg)) + MESSAGE_OVERHEAD
        for block in msg.content:
            if isinstance(block, (ImageBlock, DataBlock)):
                total += REFERENCE_TOKENS
            elif isinstance(block, ToolResultBlock):
                total += REFERENCE_TOKENS * sum(
                    1 for b in block.output if not isinstance(b, TextBlock)
                )
    return total
