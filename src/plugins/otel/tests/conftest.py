from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hookagent_otel import OtelPlugin
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@attrs.define
class Otel:
    """An SDK set up with in-memory span and metric exporters, never the global providers."""

    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def plugin(self, **options: Any) -> OtelPlugin:
        return OtelPlugin(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options
        )

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name.startswith(prefix)]

    def tree(self) -> list[Any]:
        """Each root as (name, [children...]), children in start order."""
        spans = sorted(self.finished(), key=lambda s: s.start_time or 0)
        ids = {s.context.span_id for s in spans}

        def node(span: ReadableSpan) -> Any:
            kids = [
                s
                for s in spans
                if s.parent is not None and s.parent.span_id == span.context.span_id
            ]
            return (span.name, [node(k) for k in kids])

        return [node(s) for s in spans if s.parent is None or s.parent.span_id not in ids]

    def metrics(self) -> dict[str, list[Any]]:
        """Metric name -> its data points (attributes and value / sum / count)."""
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(spans, reader, tracer_provider, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()
