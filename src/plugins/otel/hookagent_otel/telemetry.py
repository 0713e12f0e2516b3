"""Run spans from run events, persist spans from the persist hooks, and the safety net.

A run span starts at ``run_started`` as a child of whatever span is current (a tool span of
the parent run for a subagent, the application's request span for a top-level call), is
made current for the run (so model, tool and persist spans, subagents and log records nest
under it) and ends at the run's one end event with the outcome and status.

Every telemetry operation goes through ``guard``: an exception in the OpenTelemetry SDK, a
span processor or an exporter is logged and swallowed; it never reaches the run.
"""

from __future__ import annotations

import contextvars
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import attrs
from hookagent.context import RuntimeContext
from hookagent.events import RunEvent
from hookagent.runs import AgentRun
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from . import __version__
from .logs import Correlation, reset_correlation, set_correlation
from .metrics import Instruments
from .options import OtelOptions

log = logging.getLogger("hookagent_otel")
SCOPE = "hookagent_otel"
P = ParamSpec("P")
R = TypeVar("R")
_END = {"run_finished", "run_suspended", "run_failed", "run_interrupted"}
_FAILURES_LOGGED = 5


@attrs.define(eq=False)
class RunRecord:
    span: Span
    started: float
    otel_token: object
    corr_token: contextvars.Token[Correlation | None]
    attrs: dict[str, str]
    cur_token: contextvars.Token[RunRecord | None] | None = None
    persist: tuple[Span, float] | None = None


RunKey = tuple[str, str, str, str]


def _key(event: RunEvent) -> RunKey:
    return (event.agent_id, event.user_id, event.session_id, event.run_id)


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def store_kind(ctx: RuntimeContext) -> str:
    """The configured store's scheme (never its URL: it may hold a password) or class name."""
    run = ctx.get(AgentRun)
    config = getattr(getattr(run, "host", None), "config", None)
    store = getattr(config, "state_store", None)
    if store is None:
        return "default"
    if isinstance(store, str):
        return store.split("://", 1)[0] if "://" in store else "file"
    return type(store).__name__


def model_name(ctx: RuntimeContext) -> str:
    run = ctx.get(AgentRun)
    model = getattr(getattr(getattr(run, "host", None), "kernel", None), "model", None)
    name = getattr(model, "name", None)
    return name if isinstance(name, str) else type(model).__name__


class Telemetry:
    """The tracer, the instruments and the open spans of one plugin instance."""

    def __init__(
        self,
        options: OtelOptions,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
    ) -> None:
        self.options = options
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, __version__, meter_provider=meter_provider)
        self.m = Instruments(meter)
        self.runs: dict[RunKey, RunRecord] = {}
        self.admin_persists: weakref.WeakKeyDictionary[RuntimeContext, tuple[Span, float]] = (
            weakref.WeakKeyDictionary()
        )
        self._current: contextvars.ContextVar[RunRecord | None] = contextvars.ContextVar(
            f"hookagent_otel_run_{id(self)}", default=None
        )
        self.failures = 0

    # ---------------------------------------------------------------- the safety net
    def guard(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return func(*args, **kwargs)
        except Exception:
            self.failures += 1
            if self.failures <= _FAILURES_LOGGED:
                log.warning("telemetry failed (the run goes on)", exc_info=True)
            return None

    # ---------------------------------------------------------------- run events
    def on_event(self, event: RunEvent) -> None:
        kind = event.kind
        if kind == "run_started":
            self.guard(self._start_run, event)
        elif kind in _END:
            self.guard(self._end_run, event)
        elif kind == "state_loaded":
            self.guard(self._loaded, event)

    def _start_run(self, event: RunEvent) -> None:
        labels = {"gen_ai.agent.name": event.agent_id}
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": event.agent_id,
            "gen_ai.agent.name": event.agent_id,
            "gen_ai.conversation.id": event.session_id,
            "hookagent.agent_id": event.agent_id,
            "hookagent.session_id": event.session_id,
            "hookagent.run_id": event.run_id,
        }
        if event.turn_id is not None:
            attributes["hookagent.turn_id"] = event.turn_id
        if self.options.record_user_id:
            attributes["user.id"] = event.user_id
        admitted = event.data.get("admitted_at")
        span = self.tracer.start_span(
            f"invoke_agent {event.agent_id}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(admitted) if isinstance(admitted, float) else None,
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        corr = set_correlation(
            Correlation(event.run_id, event.turn_id, event.session_id, event.agent_id)
        )
        record = RunRecord(span, time.perf_counter(), token, corr, labels)
        self.runs[_key(event)] = record
        record.cur_token = self._current.set(record)

    def _loaded(self, event: RunEvent) -> None:
        record = self.runs.get(_key(event))
        if record is not None and record.span.is_recording():
            version, messages = event.data.get("version"), event.data.get("messages")
            record.span.add_event(
                "hookagent.state.loaded",
                {"hookagent.state.version": version, "hookagent.state.messages": messages},
            )
            record.span.set_attribute("hookagent.state.loaded_version", version)
            started = event.data.get("load_started_at")
            if isinstance(started, float):  # a timed span for the load, under the run
                load = self.tracer.start_span(
                    "hookagent.state.load",
                    context=trace.set_span_in_context(record.span),
                    start_time=_ns(started),
                    attributes={
                        "hookagent.store.class": str(event.data.get("store", "")),
                        "hookagent.state.version": version if isinstance(version, int) else -1,
                        "hookagent.state.messages": messages if isinstance(messages, int) else -1,
                    },
                )
                load.end(end_time=_ns(event.timestamp))

    def _end_run(self, event: RunEvent) -> None:
        record = self.runs.pop(_key(event), None)
        if record is None:
            return
        try:
            self._close_run(record, event)
        finally:
            try:
                otel_context.detach(record.otel_token)  # type: ignore[arg-type]
            finally:
                reset_correlation(record.corr_token)
                self._reset_current(record)

    def _close_run(self, record: RunRecord, event: RunEvent) -> None:
        span, data = record.span, event.data
        outcome = str(data.get("outcome", "UNKNOWN"))
        labels = {**record.attrs, "hookagent.outcome": outcome}
        error = str(data.get("error", "")) if event.kind == "run_failed" else ""
        error_type = error.split(":", 1)[0] if error else ""
        if record.persist is not None:  # the save never finished: a conflict, a dead store
            self._end_persist(record.persist, error_type=error_type or "unfinished")
            record.persist = None
        span.set_attribute("hookagent.outcome", outcome)
        if event.kind == "run_failed":
            span.set_attribute("error.type", error_type)
            # the message may quote user content (a provider's error): only when opted in
            detail = error if self.options.record_content else error_type
            span.set_status(Status(StatusCode.ERROR, detail))
            self.m.run_errors.add(1, {**record.attrs, "error.type": error_type})
        elif event.kind == "run_interrupted":
            reason = str(data.get("reason") or "interrupt")
            span.set_attribute("hookagent.interrupt_reason", reason)
            span.set_status(Status(StatusCode.ERROR, f"interrupted ({reason})"))
            self.m.interrupts.add(1, {**record.attrs, "hookagent.interrupt_reason": reason})
        elif event.kind == "run_suspended":
            span.set_attribute("hookagent.suspend_kind", str(data.get("kind", "")))
            span.set_attribute("hookagent.pending", len(data.get("pending") or ()))
        self.m.runs.add(1, labels)
        self.m.run_duration.record(time.perf_counter() - record.started, labels)
        span.end()

    def _reset_current(self, record: RunRecord) -> None:
        try:
            if record.cur_token is not None:
                self._current.reset(record.cur_token)
        except ValueError:  # ended in another context than it started in
            self._current.set(None)

    # ---------------------------------------------------------------- persist hooks
    def before_persist(self, ctx: RuntimeContext, outcome: str) -> None:
        self.guard(self._start_persist, ctx, outcome)

    def _start_persist(self, ctx: RuntimeContext, outcome: str) -> None:
        span = self.tracer.start_span(
            "hookagent.state.persist",
            attributes={
                "hookagent.store.kind": store_kind(ctx),
                "hookagent.persist.outcome": outcome,
                "hookagent.session_id": ctx.session_id or "",
            },
        )
        pending = (span, time.perf_counter())
        record = self._current.get()
        if record is not None and outcome != "admin":
            record.persist = pending
        else:
            self.admin_persists[ctx] = pending

    def after_persist(self, ctx: RuntimeContext, version: int) -> None:
        self.guard(self._after_persist, ctx, version)

    def _after_persist(self, ctx: RuntimeContext, version: int) -> None:
        record = self._current.get()
        pending = self.admin_persists.pop(ctx, None)
        if pending is None and record is not None:
            pending, record.persist = record.persist, None
        if pending is not None:
            self._end_persist(pending, version=version)

    def _end_persist(
        self, pending: tuple[Span, float], *, version: int | None = None, error_type: str = ""
    ) -> None:
        span, started = pending
        labels: dict[str, str] = {}
        if error_type:
            labels["error.type"] = error_type
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
            if error_type == "VersionConflict":
                self.m.conflicts.add(1)
        if version is not None:
            span.set_attribute("hookagent.state.version", version)
        self.m.save_duration.record(time.perf_counter() - started, labels)
        span.end()
