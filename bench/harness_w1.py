"""W1 (bench/workload.md) with the full harness preset, beside the bare kernel on the same store.

    .venv/bin/python bench/harness_w1.py                        # file, Redis, PostgreSQL
    .venv/bin/python bench/harness_w1.py --stores file --calls 300

For each store, two runs of W1's 1,000 calls (one session, an agent built per call):
``kernel`` (the store alone, LEGACY mode) and ``harness`` (``harness_config``: workspace,
tasks, permissions in default mode with an allow rule for ``lookup``, plan mode, memory with a
MEMORY.md, compaction at its defaults with the demo summariser, and the session log on the
store's own URL, the preset's default). Reported: per-call wall and CPU medians over calls
1-20, 491-510 and 981-1000, last/first, the harness's per-call cost over the kernel's (the
framework cost the preset adds), the largest model input of any request (compaction bounds
it) and the machine's load before and after. It never asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata as md
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import SYSTEM_PROMPT, BenchModel, lookup, store_plugins
from bench_texts import user_text
from hookagent import AgentConfig, ModelRequest, ModelResponse, RunEvent, RuntimeContext, hookimpl
from hookagent_harness import PARTS, harness_config
from hookagent_model_demo import DemoModel

STORES = {
    "file": "file:///tmp/harnessbench/files",
    "redis": "redis://127.0.0.1:6379/15?prefix=harnessbench",
    "postgresql": "postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=harnessbench_",
}
HARNESS_PLUGINS = {
    "tasks",
    "permissions",
    "workspace",
    "memory",
    "plan-mode",
    "compaction",
    "session-log",
}
USER = "user-hw1"
PER_CALL = 4  # messages a W1 call appends
TRIGGER = 50  # the preset's compaction trigger (messages)


class Recording(BenchModel):
    """The workload's scripted model, recording each request's size (messages, tokens)."""

    def __init__(self) -> None:
        self.sizes: list[tuple[int, int]] = []
        self.count: Any = None

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        tokens = self.count(request) if self.count is not None else 0
        self.sizes.append((len(request.messages), tokens))
        return await super().generate(request, ctx)


class Compactions:
    def __init__(self) -> None:
        self.finished: list[dict[str, Any]] = []

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        if event.kind == "compaction_finished":
            self.finished.append(dict(event.data))


def harness_plugins() -> list[Any]:
    """The harness plugins' entry points, loaded by name (nothing else: no otel, no examples)."""
    return [ep.load() for ep in md.entry_points(group="hookagent") if ep.name in HARNESS_PLUGINS]


COUNT_TOKENS = os.environ.get("HARNESS_BENCH_COUNT_TOKENS", "1") != "0"
"""The largest request in tokens is measured by counting every request: the bench's own
work inside the timed call (``HARNESS_BENCH_COUNT_TOKENS=0`` or ``--no-count`` leaves it out)."""


def med(xs: list[float]) -> float | None:
    return round(statistics.median(xs) * 1000, 3) if xs else None


def windows(xs: list[float]) -> dict[str, float | None]:
    return {
        "calls_1_20": med(xs[:20]),
        "calls_491_510": med(xs[490:510]),
        "calls_981_1000": med(xs[-20:]),
    }


def configure(
    kind: str, store: str, model: Recording, observed: Compactions, root: Path
) -> AgentConfig:
    options: dict[str, Any] = {}
    if store.startswith("postgresql"):  # the workload's connection ceiling (pool 10)
        options["state_store_options"] = {"pool_size": 10, "max_overflow": 0}
    common: dict[str, Any] = {
        "name": "bench",
        "agent_id": f"bench-{kind}",
        "model": model,
        "tools": [lookup],
        "state_store": store,
        "system_prompt": SYSTEM_PROMPT,
        "autoload_plugins": False,
        **options,
    }
    if kind == "kernel":
        return AgentConfig(plugins=[*store_plugins(), observed], **common)
    rules = [*next(p for p in PARTS if p.plugin == "permissions").options["rules"]]
    rules.append({"tool_name": "lookup", "behavior": "allow", "source": "bench"})
    return harness_config(
        plugins=[*store_plugins(), *harness_plugins(), observed],
        workspace={"url": str(root / "workspace")},
        permissions={"rules": rules},
        compaction={"summary_model": DemoModel(delay=0)},
        **common,
    )


async def run(kind: str, store: str, calls: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="harnessbench-"))
    session = f"sess-{kind}-{int(time.time())}"  # a fresh session (and log) per run
    model, observed = Recording(), Compactions()
    config = configure(kind, store, model, observed, root)
    kernel = config.kernel
    if kind == "harness" and COUNT_TOKENS:  # cached per message object: cheap when bounded
        # (the bare kernel's run is not counted: a reloaded 4,000-message history is new objects
        # every call, and counting it would be the bench's own O(history) cost, not the kernel's)
        model.count = lambda request: kernel.count_tokens(request.messages, request.system)
    ctx = RuntimeContext(user_id=USER, session_id=session)
    if kind == "harness":
        workspace = kernel.workspace(ctx)
        assert workspace is not None
        await workspace.write_text("MEMORY.md", "# Memory\n\n" + "- a note the agent keeps\n" * 40)
    wall: list[float] = []
    cpu: list[float] = []
    for n in range(1, calls + 1):
        w, c = time.perf_counter(), time.process_time()
        async with config.build() as agent:
            await agent.call(user_text(n), ctx.derive(run_id=None))
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    state = await config.build().get_agent_state(USER, session)
    await config.aclose()
    first, last = med(wall[:20]), med(wall[-20:])
    max_messages = max(m for m, _ in model.sizes)
    return {
        "kind": kind,
        "store": store.split("://")[0],
        "session_log": config.session_log if isinstance(config.session_log, str) else None,
        "calls": calls,
        "history_at_end": len(state.context),
        "wall_median_ms": windows(wall),
        "cpu_median_ms": windows(cpu),
        "last_over_first": round(last / first, 2) if first and last else None,
        "max_request_messages": max_messages,
        "max_request_tokens": (
            max(t for _, t in model.sizes) if kind == "harness" and COUNT_TOKENS else None
        ),
        "messages_bound": TRIGGER + PER_CALL,
        "messages_bound_held": kind == "kernel" or max_messages < TRIGGER + PER_CALL,
        "compactions": len(observed.finished),
        "accepted": sum(1 for f in observed.finished if f["accepted"]),
        "total_wall_s": round(sum(wall), 2),
        "total_cpu_s": round(sum(cpu), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="file,redis,postgresql")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--no-count", action="store_true", help="do not count request tokens (the bench's own cost)"
    )
    args = parser.parse_args()
    global COUNT_TOKENS
    COUNT_TOKENS = COUNT_TOKENS and not args.no_count
    results = []
    for name in args.stores.split(","):
        pair = {}
        for kind in ("kernel", "harness"):
            load = os.getloadavg()
            result = asyncio.run(run(kind, STORES.get(name, name), args.calls))
            result["load_before"] = [round(x, 2) for x in load]
            result["load_after"] = [round(x, 2) for x in os.getloadavg()]
            pair[kind] = result
            print(json.dumps(result), flush=True)
        cost = {
            window: round(h - k, 3) if h is not None and k is not None else None
            for (window, h), k in zip(
                pair["harness"]["wall_median_ms"].items(),
                pair["kernel"]["wall_median_ms"].values(),
                strict=True,
            )
        }
        summary = {"store": name, "harness_minus_kernel_wall_ms": cost}
        print(json.dumps(summary), flush=True)
        results.append({**pair, **summary})
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
