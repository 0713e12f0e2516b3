"""Live rendering of run events: streamed text, tool calls and their results, interrupts."""

from __future__ import annotations

import logging
from typing import Any, TextIO

from hookagent import RunEvent
from hookagent.hookspecs import hookimpl
from hookagent.kernel import ToolCall
from hookagent.messages import ToolResultBlock, ToolUseBlock
from hookagent.state import AgentState

from .render import call_text, short


class ToolResultTap:
    """A plugin recording each tool result by id, so the printer can show what a tool said."""

    def __init__(self) -> None:
        self.results: dict[str, ToolResultBlock] = {}

    @hookimpl
    def hookagent_wrap_tool_call(self) -> Any:
        async def middleware(call: ToolCall, ctx: Any, call_next: Any) -> Any:
            result = await call_next(call)
            if isinstance(result, ToolResultBlock):  # not a pending interaction
                self.results[result.id] = result
            return result

        return middleware


class EventPrinter:
    """Prints a run as it happens. ``stream`` shows the model's text; ``out`` gets tool lines."""

    def __init__(
        self,
        out: TextIO,
        tap: ToolResultTap,
        *,
        stream: bool = True,
        prompt: str = "agent> ",
        indent: str = "  ",
    ) -> None:
        self.out, self.tap, self.stream, self.prompt = out, tap, stream, prompt
        self.indent = indent
        self.at_line_start = True
        self.streamed: set[str] = set()
        self._deltas = False
        self.version: int | None = None
        self.state: AgentState | None = None
        self.loaded = 0  # messages in the slot when the call loaded it

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        if text:
            self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def event(self, event: RunEvent, state: AgentState | None) -> None:
        kind, data = event.kind, event.data
        if state is not None:
            self.state = state
        state = self.state
        if data.get("child"):
            return
        if kind == "model_delta" and self.stream and data.get("text"):
            if self.at_line_start:
                self._write(self.prompt)
            self._write(data["text"])
            self._deltas = True
        elif kind == "model_responded":
            if self._deltas:
                self.streamed.add(data.get("message_id", ""))
            self._deltas = False
            if not self.at_line_start:
                self._write("\n")
        elif kind == "tool_called":
            use = _find_use(state, data.get("tool_use_id"))
            what = call_text(use) if use else f"{data.get('tool')}(…)"
            self.line(f"{self.indent}· calling {what}")
        elif kind in ("tool_returned", "tool_failed", "tool_denied"):
            result = self.tap.results.get(data.get("tool_use_id", ""))
            said = f": {short(result.text, 70)}" if result is not None else ""
            self.line(f"{self.indent}· {data.get('tool')} → {data.get('state')}{said}")
        elif kind == "tool_suspended":
            self.line(f"{self.indent}· {data.get('tool')} waits ({data.get('kind')})")
        elif kind == "interaction_resolved":
            self.line(f"{self.indent}· answer {data.get('answer')} for {data.get('tool_use_id')}")
        elif kind == "state_loaded":
            self.loaded = int(data.get("messages") or 0)
        elif kind == "state_persisted":
            self.version = data.get("version")
        elif kind == "run_interrupted":
            closed = _interrupted_results(state, self.loaded)
            what = (
                f"{closed} open tool call{'s' if closed != 1 else ''} closed as 'interrupted', "
                if closed
                else ""
            )
            self.line(
                f"{self.indent}· interrupted ({data.get('reason')}): {what}"
                f"state saved at version {self.version}"
            )
        # run_failed: the caller prints the error once (chat: a progress line; run: the
        # one-line "hookagent: error: ...")

    def reply(self, reply_id: str, text: str) -> None:
        """Print the final reply unless it was already streamed."""
        if reply_id not in self.streamed:
            self.line(f"{self.prompt}{text}")


class ProgressLog(logging.Handler):
    """Warnings logged during a call (a model provider's retries, ...) as progress lines.

    Installed on the root logger while a command runs calls, so nothing reaches Python's
    bare last-resort handler; outside a call a record goes to ``fallback`` as one line.
    """

    def __init__(self, fallback: TextIO) -> None:
        super().__init__(logging.WARNING)
        self.fallback = fallback
        self.printer: EventPrinter | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().split())
        except Exception:  # a bad format string must not break the call
            text = str(record.msg)
        kind = "retrying" if "; retry " in text else "warning"
        printer = self.printer
        if printer is not None:
            printer.line(f"{printer.indent}· {kind}: {text}")
        else:
            self.fallback.write(f"hookagent: {kind}: {text}\n")
            self.fallback.flush()


def _interrupted_results(state: AgentState | None, start: int) -> int:
    """How many tool results this call closed as 'interrupted' (after its loaded prefix)."""
    if state is None:
        return 0
    return sum(1 for m in state.context[start:] for r in m.tool_results if r.state == "interrupted")


def _find_use(state: AgentState | None, use_id: str | None) -> ToolUseBlock | None:
    if state is None:
        return None
    for msg in reversed(state.context):
        for use in msg.tool_uses:
            if use.id == use_id:
                return use
    return None
