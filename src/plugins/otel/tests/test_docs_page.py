"""Every python block of docs/observability.md is a complete program: each runs in its own
process (they set the global providers, which a test process must not keep)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PAGE = Path(__file__).resolve().parents[4] / "docs" / "observability.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


class Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.span_names: list[str] = []
        self.metric_names: list[str] = []


class Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            traces = ExportTraceServiceRequest.FromString(body)
            for rs in traces.resource_spans:
                for ss in rs.scope_spans:
                    self.server.span_names += [s.name for s in ss.spans]
        elif self.path == "/v1/metrics":
            found = ExportMetricsServiceRequest.FromString(body)
            for rm in found.resource_metrics:
                for sm in rm.scope_metrics:
                    self.server.metric_names += [m.name for m in sm.metrics]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def run(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "example.py"
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD": "", **env},
        check=False,
    )


def test_the_page_has_the_four_programs() -> None:
    assert len(BLOCKS) == 4


def test_console_exporter(tmp_path: Path) -> None:
    done = run(BLOCKS[0], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "You are on the free plan." in done.stdout
    for name in ("invoke_agent support-bot", "execute_tool lookup", "chat scripted"):
        assert f'"name": "{name}"' in done.stdout, name
    assert "ann" not in done.stdout.replace("plan", "")  # no user_id by default


def test_otlp_collector(tmp_path: Path, collector: Collector) -> None:
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    done = run(BLOCKS[1], tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello"
    assert sorted(collector.span_names) == sorted(
        ["invoke_agent agent", "hookagent.state.load", "chat scripted", "hookagent.state.persist"]
    )
    assert "hookagent.runs" in collector.metric_names
    assert "gen_ai.client.operation.duration" in collector.metric_names


def test_explicit_plugin(tmp_path: Path) -> None:
    done = run(BLOCKS[2], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]'
    )


def test_log_correlation(tmp_path: Path) -> None:
    done = run(BLOCKS[3], tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stderr.splitlines() if "billing" in x]
    run_id, turn_id, rest = line.split(" ", 2)
    assert run_id == "run-0001" and len(turn_id) == 32 and rest == "billing: refunding A-17"
