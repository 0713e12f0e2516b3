"""Model and tool spans from the middleware chains: each span really wraps its call.

The model middleware is innermost (``MODEL_ORDER``): one ``chat {model}`` span per provider
call, so a retry or a compaction-and-retry shows as its own attempt. The tool middleware is
outermost (``TOOL_ORDER``): it sees what policies decide (denied, asking) as well as the
tool's own result. Both make their span current while the call runs, so a subagent called
from a tool nests under it, and a tool's log records carry its span.
"""

from __future__ import annotations

import time
from typing import Any

from hookagent.context import RuntimeContext
from hookagent.errors import Interrupted
from hookagent.messages import ToolResultBlock
from hookagent.models import ModelRequest, ModelResponse
from hookagent.state import PendingInteraction
from hookagent.tools import ToolCall
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .content import messages_json, value_json
from .logs import current_correlation
from .telemetry import Telemetry, model_name

MODEL_ORDER = 1000
"""Innermost model middleware: after retry (-100) and compaction (100)."""
TOOL_ORDER = -1000
"""Outermost tool middleware: before plan mode (100), permissions (200), offloading (900)."""


def _agent_label() -> dict[str, str]:
    corr = current_correlation()
    return {"gen_ai.agent.name": corr.agent_id} if corr is not None else {}


class _Scope:
    """A span made current for the duration of one call (both steps guarded)."""

    def __init__(self, tel: Telemetry, span: Span | None) -> None:
        self.tel, self.span, self.token = tel, span, None
        if span is not None:
            self.token = tel.guard(otel_context.attach, trace.set_span_in_context(span))

    def close(self) -> None:
        if self.token is not None:
            self.tel.guard(otel_context.detach, self.token)


# ------------------------------------------------------------------------- the model
def make_model_middleware(tel: Telemetry) -> Any:
    async def trace_model(
        request: ModelRequest, ctx: RuntimeContext, call_next: Any
    ) -> ModelResponse:
        started = time.perf_counter()
        model = tel.guard(model_name, ctx) or "unknown"
        scope = _Scope(tel, tel.guard(_start_model, tel, model, request, ctx))
        try:
            response: ModelResponse = await call_next(request)
        except BaseException as exc:
            scope.close()
            tel.guard(_end_model, tel, scope.span, model, started, None, exc)
            raise
        scope.close()
        tel.guard(_end_model, tel, scope.span, model, started, response, None)
        return response

    return trace_model


def _start_model(tel: Telemetry, model: str, request: ModelRequest, ctx: RuntimeContext) -> Span:
    span = tel.tracer.start_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "hookagent.run_id": ctx.run_id,
            "hookagent.request.messages": len(request.messages),
            "hookagent.request.tools": len(request.tools),
        },
    )
    if tel.options.record_content and span.is_recording():
        limit = tel.options.max_content_chars
        span.set_attribute("gen_ai.input.messages", messages_json(request.messages, limit))
        if request.system:
            span.set_attribute("gen_ai.system_instructions", value_json(request.system, limit))
    return span


def _end_model(
    tel: Telemetry,
    span: Span | None,
    model: str,
    started: float,
    response: ModelResponse | None,
    error: BaseException | None,
) -> None:
    labels = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, **_agent_label()}
    if error is not None:
        kind = "interrupted" if isinstance(error, Interrupted) else type(error).__name__
        labels["error.type"] = kind
        if span is not None:
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, kind))
    elif response is not None:
        usage = response.usage
        for key, token_type in (("input_tokens", "input"), ("output_tokens", "output")):
            value = usage.get(key)
            if isinstance(value, int):
                tel.m.tokens.record(value, {**labels, "gen_ai.token.type": token_type})
                if span is not None:
                    span.set_attribute(f"gen_ai.usage.{key}", value)
        if span is not None:
            if response.stop_reason:
                span.set_attribute("gen_ai.response.finish_reasons", (response.stop_reason,))
            span.set_attribute("hookagent.response.tool_calls", len(response.message.tool_uses))
            if tel.options.record_content and span.is_recording():
                limit = tel.options.max_content_chars
                span.set_attribute(
                    "gen_ai.output.messages", messages_json([response.message], limit)
                )
    tel.m.model_duration.record(time.perf_counter() - started, labels)
    if span is not None:
        span.end()


# ------------------------------------------------------------------------- tools
def make_tool_middleware(tel: Telemetry) -> Any:
    async def trace_tool(call: ToolCall, ctx: RuntimeContext, call_next: Any) -> Any:
        started = time.perf_counter()
        scope = _Scope(tel, tel.guard(_start_tool, tel, call, ctx))
        try:
            out = await call_next(call)
        except BaseException as exc:
            scope.close()
            tel.guard(_end_tool, tel, scope.span, call, started, None, exc)
            raise
        scope.close()
        tel.guard(_end_tool, tel, scope.span, call, started, out, None)
        return out

    return trace_tool


def _start_tool(tel: Telemetry, call: ToolCall, ctx: RuntimeContext) -> Span:
    use = call.use
    span = tel.tracer.start_span(
        f"execute_tool {use.name}",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": use.name,
            "gen_ai.tool.call.id": use.id,
            "hookagent.run_id": ctx.run_id,
            "hookagent.tool.approved": call.approved,
            "hookagent.tool.known": call.tool is not None,
        },
    )
    if tel.options.record_content and span.is_recording():
        span.set_attribute(
            "gen_ai.tool.call.arguments", value_json(use.input, tel.options.max_content_chars)
        )
    return span


def _end_tool(
    tel: Telemetry,
    span: Span | None,
    call: ToolCall,
    started: float,
    out: Any,
    error: BaseException | None,
) -> None:
    if error is not None:
        outcome = "interrupted" if isinstance(error, Interrupted) else "error"
    elif isinstance(out, PendingInteraction):
        outcome = "suspended"
    elif isinstance(out, ToolResultBlock):
        outcome = out.state
    else:
        outcome = "error"
    labels = {"gen_ai.tool.name": call.use.name, "hookagent.tool.outcome": outcome}
    labels.update(_agent_label())
    tel.m.tool_calls.add(1, labels)
    tel.m.tool_duration.record(time.perf_counter() - started, labels)
    if span is None:
        return
    span.set_attribute("hookagent.tool.outcome", outcome)
    span.set_attribute("hookagent.tool.denied", outcome == "denied")
    span.set_attribute("hookagent.tool.suspended", outcome == "suspended")
    if isinstance(out, PendingInteraction):
        span.set_attribute("hookagent.tool.suspend_kind", out.kind)
    if error is not None:
        span.set_attribute(
            "error.type", "interrupted" if outcome == "interrupted" else type(error).__name__
        )
        span.set_status(Status(StatusCode.ERROR, outcome))
    elif outcome in ("error", "interrupted"):
        span.set_attribute("error.type", f"tool_{outcome}")
        span.set_status(Status(StatusCode.ERROR, outcome))
    if tel.options.record_content and isinstance(out, ToolResultBlock) and span.is_recording():
        span.set_attribute(
            "gen_ai.tool.call.result", value_json(out.text, tel.options.max_content_chars)
        )
    span.end()
