"""Keeping the history valid on every path that saves: open tool calls closed, a suspended
step finished, re-sent input after a shutdown not duplicated, synthetic replies marked.

The invariant: every tool_use in a saved history has a tool_result with the same id, except
those of a suspended step, whose results wait in ``turn_context`` until it completes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .messages import Msg, ToolResultBlock, ToolUseBlock
from .state import AgentState, TurnContext
from .tools import error_result
from .turns import GENERATE_REASON, GenerateReason


def held_ids(turn: TurnContext) -> set[str]:
    """The tool_use ids a suspended turn accounts for (pending or with a held result)."""
    return {p.tool_use_id for p in turn.pending} | {r.id for r in turn.results}


def close_open_tool_uses(state: AgentState, start: int) -> None:
    """Give every tool_use after ``start`` without a result (and not held by a suspended
    turn) an ``interrupted`` result."""
    history = state.context
    turn = state.turn_context
    keep = held_ids(turn) if turn.pending or turn.results else ()
    open_uses: dict[str, ToolUseBlock] = {}
    for msg in history[start:]:
        for block in msg.content:
            if isinstance(block, ToolUseBlock):
                if block.id not in keep:
                    open_uses[block.id] = block
            elif isinstance(block, ToolResultBlock):
                open_uses.pop(block.id, None)
    if open_uses:
        history.append(
            Msg(
                "tool",
                [
                    error_result(u, "no result was recorded", "interrupted")
                    for u in open_uses.values()
                ],
            )
        )


def step_message(state: AgentState) -> Msg | None:
    """The assistant message a suspended turn waits on, if it is still the history's tail."""
    turn = state.turn_context
    if turn.step_id is None or not state.context:
        return None
    last = state.context[-1]
    return last if last.id == turn.step_id and last.role == "assistant" else None


def finish_step(
    state: AgentState, results: dict[str, ToolResultBlock], fill: str, why: str
) -> None:
    """Append the suspended step's results in the model's order and end the turn.

    ``results`` are what the step has; every other tool_use of the step is closed with a
    ``fill`` result (``denied`` when superseded, ``interrupted`` when interrupted).
    """
    turn = state.turn_context
    step = step_message(state)
    if step is not None:
        ordered = [results.get(u.id) or error_result(u, why, fill) for u in step.tool_uses]
        state.context.append(Msg("tool", ordered))
    state.turn_context = TurnContext(iterations=turn.iterations)  # the turn's count goes on
    if step is None and turn.step_id is not None:  # the tail moved (an edit): close it
        close_open_tool_uses(state, 0)


def synthetic_reply(text: str, reason: GenerateReason, **metadata: Any) -> Msg:
    """A reply the kernel writes (not the model): interrupts, iteration and denial stops."""
    return Msg.assistant(text, metadata={GENERATE_REASON: reason.value, **metadata})


def drop_resent_input(state: AgentState, msgs: Sequence[Msg]) -> Sequence[Msg]:
    """After a shutdown interrupt, a client re-sending the interrupted input is not duplicated."""
    last_user = next((m for m in reversed(state.context) if m.role == "user"), None)
    if last_user is None or not msgs:
        return msgs
    first = msgs[0]
    if first.id == last_user.id or (first.role == "user" and first.content == last_user.content):
        tail = state.context[-1] if state.context else None
        if tail is not None and tail.metadata.get("interrupt_reason") == "shutdown":
            state.context.pop()  # the model continues the original request instead
        return msgs[1:]
    return msgs
