"""W1 (bench/workload.md) with compaction on: 1,000 calls, the defaults, the demo summariser.

    .venv/bin/python src/plugins/compaction/bench/w1.py                  # file, Redis, PostgreSQL
    .venv/bin/python src/plugins/compaction/bench/w1.py --stores file --calls 300

For each store: the largest model input of any request (messages and tokens) against the
trigger plus one call's messages; the per-call wall time medians over calls 1-20, 491-510
and 981-1000 and their ratio; compaction's own cost (the ``elapsed_ms`` of every
``compaction_finished`` event: the summary, the cut and the validation) and the calls that
compacted against those that did not. The machine's load average is printed with it.
Never asserts timings: it reports, and says whether the bounds held.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "bench"))

from bench_agent import SYSTEM_PROMPT, BenchModel, lookup, store_plugins  # noqa: E402
from bench_stores import probe_for  # noqa: E402
from bench_texts import user_text  # noqa: E402
from hookagent import (  # noqa: E402
    AgentConfig,
    ModelRequest,
    ModelResponse,
    RunEvent,
    RuntimeContext,
    hookimpl,
)
from hookagent_compaction import plugin as compaction  # noqa: E402
from hookagent_model_demo import DemoModel  # noqa: E402

STORES = {
    "file": "file:///tmp/i20bench/files",
    "redis": "redis://127.0.0.1:6379/15?prefix=i20bench",
    "postgresql": "postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=i20bench_",
}
USER, SESSION = "user-w1c", "sess-w1c"
PER_CALL = 4  # messages a W1 call appends


class Recording(BenchModel):
    """The workload's scripted model, recording each request's size."""

    def __init__(self) -> None:
        self.sizes: list[tuple[int, int]] = []

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        self.sizes.append((len(request.messages), self.count(request)))
        return await super().generate(request, ctx)

    count: Any = None


class Compactions:
    def __init__(self) -> None:
        self.finished: list[dict[str, Any]] = []

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        if event.kind == "compaction_finished":
            self.finished.append(dict(event.data))


def med(xs: list[float]) -> float | None:
    return round(statistics.median(xs) * 1000, 3) if xs else None


async def run(store: str, calls: int, enabled: bool = True) -> dict[str, Any]:
    probe_for(store).reset()
    observed = Compactions()
    model = Recording()
    options: dict[str, Any] = {}
    if store.startswith("postgresql"):  # the workload's connection ceiling (pool 10)
        options["state_store_options"] = {"pool_size": 10, "max_overflow": 0}
    config = AgentConfig(
        name="bench",
        agent_id="bench-compaction",
        model=model,
        tools=[lookup],
        state_store=store,
        system_prompt=SYSTEM_PROMPT,
        plugins=[*store_plugins(), compaction, observed],
        autoload_plugins=False,
        plugin_options={"compaction": {"summary_model": DemoModel(delay=0), "enabled": enabled}},
        **options,
    )
    kernel = config.kernel
    model.count = lambda request: kernel.count_tokens(request.messages, request.system)
    times: list[float] = []
    compacted: list[bool] = []
    for n in range(1, calls + 1):
        before = len(observed.finished)
        start = time.perf_counter()
        async with config.build() as agent:
            await agent.call(user_text(n), RuntimeContext(user_id=USER, session_id=SESSION))
        times.append(time.perf_counter() - start)
        compacted.append(len(observed.finished) > before)
    state = await config.build().get_agent_state(USER, SESSION)
    await config.aclose()
    trigger_messages = 50
    trigger_tokens = 160_000  # BenchModel declares no window
    one_call = max(t for _, t in model.sizes[:2]) * PER_CALL  # generous: one call's tokens
    max_messages = max(m for m, _ in model.sizes)
    max_tokens = max(t for _, t in model.sizes)
    elapsed = [f["elapsed_ms"] for f in observed.finished]
    first, last = med(times[:20]), med(times[-20:])
    plain = [t for t, c in zip(times, compacted, strict=True) if not c]
    with_c = [t for t, c in zip(times, compacted, strict=True) if c]
    return {
        "store": store.split("://")[0],
        "compaction": "on" if enabled else "off",
        "calls": calls,
        "history_at_end": len(state.context),
        "max_request_messages": max_messages,
        "messages_bound": trigger_messages + PER_CALL,
        "messages_bound_held": max_messages < trigger_messages + PER_CALL,
        "max_request_tokens": max_tokens,
        "tokens_bound_held": max_tokens < trigger_tokens + one_call,
        "median_ms": {
            "calls_1_20": first,
            "calls_491_510": med(times[490:510]),
            "calls_981_1000": last,
        },
        "last_over_first": round(last / first, 2) if first and last else None,
        "compactions": len(observed.finished),
        "accepted": sum(1 for f in observed.finished if f["accepted"]),
        "compaction_elapsed_ms": {
            "median": round(statistics.median(elapsed), 3) if elapsed else None,
            "max": max(elapsed) if elapsed else None,
            "total": round(sum(elapsed), 1),
            "per_call_amortised": round(sum(elapsed) / calls, 3),
        },
        "call_median_ms": {"without_compaction": med(plain), "with_compaction": med(with_c)},
        "total_s": round(sum(times), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="file,redis,postgresql")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--off", action="store_true", help="the plugin installed but disabled (a baseline)"
    )
    args = parser.parse_args()
    results = []
    for name in args.stores.split(","):
        load = os.getloadavg()
        result = asyncio.run(run(STORES.get(name, name), args.calls, not args.off))
        result["load_before"] = [round(x, 2) for x in load]
        result["load_after"] = [round(x, 2) for x in os.getloadavg()]
        results.append(result)
        print(json.dumps(result, indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
