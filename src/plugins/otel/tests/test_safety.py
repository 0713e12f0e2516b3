"""Telemetry never breaks a run; the entry point and the options behave as documented."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_otel import OtelConfigError, OtelOptions, OtelPlugin
from hookagent_otel import plugin as entry_point
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from .conftest import Otel


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def scripted_run(plugin: object, **kw: Any) -> str:
    model = ScriptedModel([tool_call("lookup", key="k"), "done"])
    cfg = AgentConfig(
        model=model,
        tools=[lookup],
        plugins=[plugin],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=kw.pop("autoload_plugins", False),
        **kw,
    )
    return cfg.build().call_sync("go", RuntimeContext(session_id="s")).text


class Boom(Exception):
    pass


class ExplodingProcessor:
    """A span processor that fails on every span (the SDK does not catch these)."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise Boom("on_start")

    def on_end(self, span: Any) -> None:
        raise Boom("on_end")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class ExplodingExporter(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        raise Boom("export")


class _Raises:
    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise Boom(name)

        return fail


class ExplodingMeterProvider:
    """Every instrument raises on add/record."""

    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        class Meter:
            def __getattr__(self, name: str) -> Any:
                return lambda *a, **k: _Raises()

        return Meter()


class ExplodingTracerProvider:
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return _Raises()


def test_failing_processor_exporter_and_instruments_never_break_a_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(ExplodingProcessor())  # type: ignore[arg-type]
    provider.add_span_processor(SimpleSpanProcessor(ExplodingExporter()))
    plugin = OtelPlugin(tracer_provider=provider, meter_provider=ExplodingMeterProvider())  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="hookagent_otel"):
        assert scripted_run(plugin) == "done"
    assert plugin.telemetry.failures > 0
    assert any("telemetry failed" in r.message for r in caplog.records)
    assert plugin.telemetry.runs == {}  # nothing left open


def test_a_tracer_that_cannot_start_spans_never_breaks_a_run() -> None:
    plugin = OtelPlugin(
        tracer_provider=ExplodingTracerProvider(), meter_provider=ExplodingMeterProvider()
    )  # type: ignore[arg-type]
    assert scripted_run(plugin) == "done"
    assert plugin.telemetry.failures > 0


def test_without_an_sdk_nothing_is_recorded_and_the_run_is_unchanged() -> None:
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)  # no SDK configured
    plugin = OtelPlugin()
    assert scripted_run(plugin) == "done"
    assert plugin.telemetry.failures == 0 and plugin.telemetry.runs == {}


def test_the_entry_point_loads_and_an_explicit_plugin_replaces_it(otel: Otel) -> None:
    auto = AgentConfig(
        model=ScriptedModel(default="ok"),
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=True,
    )
    pm = auto.kernel.pm
    assert pm.get_plugin("otel") is entry_point
    assert entry_point.default_plugin().options == OtelOptions()
    mine = otel.plugin()
    explicit = AgentConfig(
        model=ScriptedModel(default="ok"),
        plugins=[mine],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=True,
    )
    assert explicit.kernel.pm.get_plugin("otel") is mine
    explicit.build().call_sync("hi", RuntimeContext(session_id="s"))
    assert len(otel.named("invoke_agent")) == 1  # traced once, not twice


def test_options_are_checked() -> None:
    with pytest.raises(OtelConfigError, match="record_content must be a bool"):
        OtelPlugin(record_content="yes")  # type: ignore[arg-type]
    with pytest.raises(OtelConfigError, match="max_content_chars"):
        OtelPlugin(max_content_chars=0)


def test_options_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKAGENT_OTEL_RECORD_CONTENT", "1")
    monkeypatch.setenv("HOOKAGENT_OTEL_RECORD_USER_ID", "off")
    assert OtelOptions.from_env() == OtelOptions(record_content=True, record_user_id=False)
    monkeypatch.setenv("HOOKAGENT_OTEL_RECORD_USER_ID", "maybe")
    with pytest.raises(OtelConfigError, match="HOOKAGENT_OTEL_RECORD_USER_ID='maybe'"):
        OtelOptions.from_env()
