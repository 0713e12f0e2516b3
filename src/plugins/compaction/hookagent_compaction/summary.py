"""The summary request and the summary message.

The request (``purpose="summary"``) has no tools, a system prompt with the instructions, and
one user message: a plain-text transcript (the format is documented in docs/compaction.md),
so that any provider can answer it, whatever it thinks of tool blocks without tools:

    ## Previous summary
    <the summary this one replaces, when there is one>
    ## Messages to summarise
    ### user
    <text>
    ### assistant
    <text>
    [tool call lookup {"key": 3} id=call_3]
    ### tool
    [tool result lookup success id=call_3]
    <text, at most summary_block_chars characters, with a note when cut>
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson
from hookagent.messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

from .cut import SUMMARY_KEY

PREVIOUS = "## Previous summary"
MESSAGES = "## Messages to summarise"
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted]"
INSTRUCTIONS = (
    "You compact the history of a conversation between a user and an AI agent that uses "
    "tools. Write the summary the agent will read instead of those messages, so that it can "
    "carry on without them: the user's goals, constraints and preferences; decisions made; "
    "facts learned (names, numbers, file paths, ids, offloaded result paths); which tools "
    "were used and what they found; what is done and what is still open. Fold the previous "
    "summary in and keep whatever of it still matters. Write at most {budget} tokens, plain "
    "text, no preamble."
)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"


def _block(block: object, limit: int) -> str | None:
    if isinstance(block, TextBlock):
        return _clip(block.text, limit)
    if isinstance(block, ToolUseBlock):
        args = orjson.dumps(block.input).decode()
        return f"[tool call {block.name} {_clip(args, limit)} id={block.id}]"
    if isinstance(block, ToolResultBlock):
        body = "\n".join(
            o.text if isinstance(o, TextBlock) else (_block(o, limit) or "") for o in block.output
        )
        return f"[tool result {block.name} {block.state} id={block.id}]\n{_clip(body, limit)}"
    if isinstance(block, ImageBlock):
        return f"[image {block.url}]"
    if isinstance(block, DataBlock):
        return f"[data {block.name or ''} {block.url}]".replace("  ", " ")
    if isinstance(block, ThinkingBlock):
        return None  # the model's private reasoning is not carried into the summary
    return None


def render_transcript(messages: Sequence[Msg], previous: str | None, block_chars: int) -> str:
    """The summariser's input: the previous summary, then each message (blocks clipped)."""
    lines: list[str] = []
    if previous:
        lines += [PREVIOUS, previous.strip(), ""]
    lines.append(MESSAGES)
    for msg in messages:
        lines.append(f"### {msg.role}" + (f" ({msg.name})" if msg.name else ""))
        lines.extend(x for x in (_block(b, block_chars) for b in msg.content) if x)
    return "\n".join(lines)


def instructions(budget_tokens: int, custom: str | None) -> str:
    return (custom or INSTRUCTIONS).replace("{budget}", str(budget_tokens))


def summary_message(summary: str, summarised: int) -> Msg:
    """The one message at the head of a compacted history (a user message: every provider
    accepts it first)."""
    return Msg.user(
        f"{SUMMARY_HEADER}\n{summary.strip()}",
        metadata={SUMMARY_KEY: {"summarised": summarised, "at": round(time.time(), 3)}},
    )
