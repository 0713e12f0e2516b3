"""An OTLP/HTTP export to a loopback receiver that decodes the protobuf shows the same tree."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_otel import OtelPlugin
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.spans: list[Any] = []
        self.paths: list[str] = []


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        self.server.paths.append(self.path)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.server.spans.extend((scope.scope.name, s) for s in scope.spans)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def test_otlp_http_export_shows_the_span_tree(receiver: Receiver) -> None:
    port = receiver.server_address[1]
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=10)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    cfg = AgentConfig(
        name="bot",
        model=ScriptedModel([tool_call("lookup", key="k"), "done"]),
        tools=[lookup],
        plugins=[OtelPlugin(tracer_provider=provider)],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    ctx = RuntimeContext(session_id="s")
    assert cfg.build().call_sync("go", ctx).text == "done"
    provider.shutdown()
    assert set(receiver.paths) == {"/v1/traces"}
    spans = {s.span_id: s for _, s in receiver.spans}
    assert {scope for scope, _ in receiver.spans} == {"hookagent_otel"}

    def children(parent: bytes) -> list[Any]:
        kids = [s for s in spans.values() if s.parent_span_id == parent]
        return sorted(kids, key=lambda s: s.start_time_unix_nano)

    [root] = children(b"")
    assert root.name == "invoke_agent bot"
    attributes = {a.key: a.value.string_value for a in root.attributes}
    assert attributes["hookagent.run_id"] == ctx.run_id
    assert attributes["hookagent.outcome"] == "COMPLETED"
    assert [s.name for s in children(root.span_id)] == [
        "hookagent.state.load",
        "chat scripted",
        "execute_tool lookup",
        "chat scripted",
        "hookagent.state.persist",
    ]
    assert len({s.trace_id for s in spans.values()}) == 1
