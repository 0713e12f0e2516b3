"""Per-call overhead of the otel plugin: off, on with no SDK, on with the in-memory exporter.

    .venv/bin/python src/plugins/otel/bench/overhead.py [--calls 2000] [--repeats 5]

Each call is one agent call of the standard shape (a model call asking for one tool, the
tool, a final model call, a save) on an in-memory store; the figure is the best of
``repeats`` means, in microseconds per call. The global providers are never set, so "no
SDK" is OpenTelemetry's no-op path, exactly what an application that installed the plugin
but configured nothing gets.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
from hookagent import (
    AgentConfig,
    InMemoryAgentStateStore,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    ToolUseBlock,
)
from hookagent_otel import OtelPlugin
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Model:
    name = "bench"

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        if request.messages[-1].role == "user":
            use = ToolUseBlock("c1", "lookup", {"key": 1})
            return ModelResponse(Msg.assistant([use]), usage={"input_tokens": 10})
        return ModelResponse(Msg.assistant("done"), usage={"output_tokens": 2})


async def lookup(key: int) -> str:
    """Look a key up."""
    return "x" * 200


def modes() -> dict[str, list[Any]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    sdk = OtelPlugin(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return {"off": [], "on, no SDK": [OtelPlugin()], "on, in-memory exporter": [sdk]}


async def measure(plugins: list[Any], calls: int) -> float:
    agent = AgentConfig(
        model=Model(),
        tools=[lookup],
        plugins=plugins,
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()
    start = time.perf_counter()
    for i in range(calls):
        await agent.call("go", RuntimeContext(user_id="u", session_id=f"s{i}"))
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    found = modes()
    best = {name: float("inf") for name in found}
    for _ in range(args.repeats):
        for name, plugins in found.items():  # interleaved: drift hits every mode alike
            best[name] = min(best[name], anyio.run(measure, plugins, args.calls))
    base = best["off"]
    for name, micros in best.items():
        print(f"{name:>24}: {micros:8.1f} us/call  ({micros - base:+7.1f} us)")


if __name__ == "__main__":
    main()
