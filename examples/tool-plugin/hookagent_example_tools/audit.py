"""A tool-call middleware: caps what a tool may send back to the model and audits every call.

The audit trail lives on the call's ``RuntimeContext`` (``ctx.get(AuditLog)``): it is never
persisted and never shown to the model. A caller that wants to read it afterwards puts its
own ``AuditLog`` on the context before the call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import attrs
from hookagent import PendingInteraction, RuntimeContext, TextBlock, ToolCall, ToolResultBlock

CallNext = Callable[[ToolCall], Awaitable[ToolResultBlock | PendingInteraction]]

DEFAULT_MAX_OUTPUT_CHARS = 4000
"""Tool output text longer than this is cut before the model sees it."""


@attrs.frozen
class AuditEntry:
    """One tool call as the middleware saw it."""

    tool: str
    tool_use_id: str
    arguments: dict[str, object]
    state: str
    duration_ms: float
    truncated_chars: int = 0


@attrs.define
class AuditLog:
    """Every tool call of one execution, in order."""

    entries: list[AuditEntry] = attrs.Factory(list)

    def tools(self) -> list[str]:
        return [e.tool for e in self.entries]


class AuditMiddleware:
    """``async def __call__(call, ctx, call_next) -> ToolResultBlock``: the hook's contract."""

    def __init__(self, *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> None:
        if type(max_output_chars) is not int or max_output_chars < 1:
            raise ValueError(f"max_output_chars must be a positive int, got {max_output_chars!r}")
        self.max_output_chars = max_output_chars

    async def __call__(
        self, call: ToolCall, ctx: RuntimeContext, call_next: CallNext
    ) -> ToolResultBlock | PendingInteraction:
        started = time.perf_counter()
        result = await call_next(call)  # the rest of the chain, then the tool itself
        if isinstance(result, PendingInteraction):
            return result  # the turn suspends: nothing ran yet, nothing to audit
        result, cut = self.cap(result)
        log = ctx.get(AuditLog)
        if log is None:
            log = AuditLog()
            ctx.put(AuditLog, log)
        log.entries.append(
            AuditEntry(
                tool=call.use.name,
                tool_use_id=call.use.id,
                arguments=dict(call.use.input),
                state=result.state,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                truncated_chars=cut,
            )
        )
        return result

    def cap(self, result: ToolResultBlock) -> tuple[ToolResultBlock, int]:
        """Cut the text blocks so that together they hold at most ``max_output_chars``."""
        budget = self.max_output_chars
        total = sum(len(b.text) for b in result.output if isinstance(b, TextBlock))
        if total <= budget:
            return result, 0
        cut = total - budget
        output: list[object] = []
        for block in result.output:
            if not isinstance(block, TextBlock):
                output.append(block)
                continue
            kept = block.text[: max(budget, 0)]
            budget -= len(kept)
            if kept:
                output.append(TextBlock(kept))
        output.append(TextBlock(f"\n[output truncated: {cut} more characters]"))
        return attrs.evolve(result, output=tuple(output)), cut
