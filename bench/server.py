"""The HTTP service's cost: sustained calls/s and p50/p99 latency of a call (submit, then
the view once final) through uvicorn on loopback, at N concurrent sessions, beside the same
calls made directly on the SessionHost (no HTTP) and on the Agent (no inbox).

    python bench/server.py --sessions 50 --turns 10 --backend memory
    python bench/server.py --sessions 50 --turns 10 --backend redis

The scripted model answers at once, so the figures are the service's own overhead. The
server runs in a thread of this process (one event loop, like one uvicorn worker); the
clients run in the main thread. Never asserts timings (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src/plugins/server/tests"))

from hookagent import AgentConfig, RuntimeContext
from hookagent.messages import new_id
from hookagent.testing import ScriptedModel
from hookagent_server import BearerTokens
from hookagent_session import SessionHost
from server_support import TOKENS, auth


def urls(backend: str, tag: str) -> tuple[str, str]:
    if backend == "memory":
        return f"memory://bench-{tag}", f"memory://bench-{tag}-inbox"
    if backend == "redis":
        base = "redis://127.0.0.1:6379/14"
        return f"{base}?prefix=srvbench-{tag}", f"{base}?prefix=srvbench-{tag}-inbox"
    base = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
    return f"{base}?table_prefix=b{tag[:8]}_", f"{base}?table_prefix=b{tag[:8]}_i_"


def config(log: str) -> AgentConfig:
    return AgentConfig(
        name="bench",
        model=ScriptedModel(default="ok"),
        plugins=[BearerTokens(TOKENS)],
        session_log=log,
    )


async def drive(
    sessions: int, turns: int, one: Callable[[int, int], Awaitable[None]]
) -> dict[str, Any]:
    latencies: list[float] = []

    async def session(i: int) -> None:
        for n in range(turns):
            t = time.perf_counter()
            await one(i, n)
            latencies.append(time.perf_counter() - t)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(sessions):
            tg.start_soon(session, i)
    wall = time.perf_counter() - start
    latencies.sort()
    return {
        "calls": len(latencies),
        "calls_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
    }


def via_http(backend: str, sessions: int, turns: int) -> dict[str, Any]:
    """Through ``hookagent serve`` in its own process (its own interpreter, like a replica)."""
    tag = new_id()[:10]
    log, inbox = urls(backend, tag)
    tokens = Path(tempfile.mkdtemp()) / "tokens"
    tokens.write_text("".join(f"{u} {t}\n" for u, t in TOKENS.items()))
    tests = Path(__file__).resolve().parent.parent / "src/plugins/server/tests"
    env = {**os.environ, "TEST_SESSION_LOG": log, "PYTHONPATH": str(tests)}
    cmd = [
        sys.executable, "-c", "from hookagent_cli.main import main; raise SystemExit(main())",
        "serve", "--config", "server_support:scripted_config", "--inbox", inbox, "--port", "0",
        "--tokens-file", str(tokens), "--log-level", "warning",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().rsplit(" ", 1)[1].strip()
    try:

        async def run() -> dict[str, Any]:
            limits = httpx.Limits(max_connections=sessions * 2)
            async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
                while (await client.get("/readyz")).status_code != 200:
                    await anyio.sleep(0.05)

                async def one(i: int, n: int) -> None:
                    r = await client.post(
                        f"/v1/sessions/b{i}/runs",
                        json={"input": f"turn {n}", "idempotency_key": f"k{n}"},
                        headers=auth("alice"),
                    )
                    cid = r.json()["command_id"]
                    view = await client.get(
                        f"/v1/sessions/b{i}/runs/{cid}", params={"wait": 30}, headers=auth("alice")
                    )
                    assert view.json()["status"] == "completed", view.text

                return await drive(sessions, turns, one)

        return anyio.run(run)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def direct(backend: str, sessions: int, turns: int) -> dict[str, dict[str, Any]]:
    async def run() -> dict[str, dict[str, Any]]:
        tag = new_id()[:10]
        log, inbox = urls(backend, tag)
        out: dict[str, dict[str, Any]] = {}
        host = SessionHost(config(log), inbox=inbox, max_concurrent_runs=sessions)
        async with host:

            async def queued(i: int, n: int) -> None:
                s = host.session("alice", f"b{i}")
                view = await s.submit(f"turn {n}", idempotency_key=f"k{n}")
                assert (await s.wait(view.command_id, timeout=30)).status == "completed"

            out["session_direct"] = await drive(sessions, turns, queued)
        log2, _ = urls(backend, new_id()[:10])
        agent = config(log2).build()
        async with agent:

            async def call(i: int, n: int) -> None:
                await agent.call(f"turn {n}", RuntimeContext("alice", f"b{i}"))

            out["agent_call"] = await drive(sessions, turns, call)
        return out

    return anyio.run(run)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sessions", type=int, default=50)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--backend", choices=["memory", "redis", "postgresql"], default="memory")
    a = p.parse_args()
    row: dict[str, Any] = {"backend": a.backend, "sessions": a.sessions, "turns": a.turns}
    row["load_avg"] = round(os.getloadavg()[0], 2)
    row["http"] = via_http(a.backend, a.sessions, a.turns)
    row.update(direct(a.backend, a.sessions, a.turns))
    print(json.dumps(row))


if __name__ == "__main__":
    main()
