"""Live rendering of run events: streamed text, tool calls and their results, interrupts."""

from __future__ import annotations

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
        async def middleware(call: ToolCall, ctx: Any, call_next: Any) -> ToolResultBlock:
            result: ToolResultBlock = await call_next(call)
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
        elif kind == "state_persisted":
            self.version = data.get("version")
        elif kind == "run_interrupted":
            self.line(
                f"{self.indent}· interrupted ({data.get('reason')}): open tool calls closed as "
                f"'interrupted', state saved at version {self.version}"
            )
        elif kind == "run_failed":
            self.line(f"{self.indent}· failed: {data.get('error')}")

    def reply(self, reply_id: str, text: str) -> None:
        """Print the final reply unless it was already streamed."""
        if reply_id not in self.streamed:
            self.line(f"{self.prompt}{text}")


def _find_use(state: AgentState | None, use_id: str | None) -> ToolUseBlock | None:
    if state is None:
        return None
    for msg in reversed(state.context):
        for use in msg.tool_uses:
            if use.id == use_id:
                return use
    return None
