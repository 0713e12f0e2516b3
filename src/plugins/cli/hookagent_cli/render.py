"""Turning messages, states and run events into short, readable text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from hookagent.messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from hookagent.state import AgentState


def short(text: str, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_text(use: ToolUseBlock) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in use.input.items())
    return f"{use.name}({args})"


def result_text(result: ToolResultBlock, limit: int = 80) -> str:
    return f"{result.name} → {result.state}: {short(result.text, limit)}"


def message_lines(msg: Msg, width: int = 100) -> list[str]:
    """One line per block: text, tool calls with arguments, tool results with their state."""
    lines: list[str] = []
    for block in msg.content:
        if isinstance(block, TextBlock):
            lines.append(short(block.text, width))
        elif isinstance(block, ThinkingBlock):
            lines.append(f"(thinking) {short(block.thinking, width)}")
        elif isinstance(block, ToolUseBlock):
            lines.append(f"→ {call_text(block)}  [{block.id}]")
        elif isinstance(block, ToolResultBlock):
            lines.append(f"← {result_text(block, width)}  [{block.id}]")
        elif isinstance(block, (ImageBlock, DataBlock)):
            lines.append(f"({block.type}) {block.url}")
    reason = msg.metadata.get("generate_reason")
    if reason:
        lines.append(f"(generate_reason: {reason})")
    return lines or ["(empty)"]


def history_lines(messages: Iterable[Msg], start: int = 1, width: int = 100) -> list[str]:
    out: list[str] = []
    for i, msg in enumerate(messages, start):
        for j, line in enumerate(message_lines(msg, width)):
            prefix = f"{i:>4} {msg.role:<10}" if j == 0 else " " * 15
            out.append(f"{prefix} {line}")
    return out


def pairing(messages: Sequence[Msg]) -> tuple[int, int, list[str]]:
    """(tool calls, results, ids of calls without a result): the history's key invariant.

    Matched in order, as the model sees them: a result answers the latest open call with its
    id, so a server that reuses ids across turns ("call_0" every time) still counts right.
    """
    calls = results = 0
    open_ids: list[str] = []
    for msg in messages:
        for block in msg.content:
            if isinstance(block, ToolUseBlock):
                calls += 1
                open_ids.append(block.id)
            elif isinstance(block, ToolResultBlock):
                results += 1
                for i in range(len(open_ids) - 1, -1, -1):
                    if open_ids[i] == block.id:
                        del open_ids[i]
                        break
    return calls, results, open_ids


def section_lines(state: AgentState) -> list[str]:
    """The sections besides the history, only those that say something."""
    lines: list[str] = []
    if state.tool_context.activated_groups:
        lines.append("tool groups: " + ", ".join(state.tool_context.activated_groups))
    if state.shutdown_interrupted:
        lines.append("the last call was interrupted by a shutdown")
    for name, value in sorted(state.extensions.items()):  # plugin sections, as JSON
        lines.append(f"section {name}: {short(json.dumps(value, default=str), 90)}")
    return lines


def show_state(state: AgentState, version: int, out: TextIO) -> None:
    calls, results, missing = pairing(state.context)
    print(
        f"session {state.session_id!r} of user {state.user_id!r}: version {version}, "
        f"{len(state.context)} messages, {calls} tool calls, {results} results",
        file=out,
    )
    if missing:
        print(f"WARNING: tool calls without a result: {', '.join(missing)}", file=out)
    if state.summary:
        print(f"summary: {short(state.summary, 300)}", file=out)
    for line in section_lines(state):
        print(line, file=out)
    if state.context:
        print("conversation:", file=out)
        for line in history_lines(state.context):
            print(line, file=out)
    else:
        print("conversation: (empty)", file=out)


def as_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True)
