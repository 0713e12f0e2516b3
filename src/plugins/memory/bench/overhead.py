"""Per-request cost of the memory plugin (on hookagent-workspace).

    .venv/bin/python src/plugins/memory/bench/overhead.py [--calls 1000] [--repeats 5]

Two figures per mode, best of ``repeats`` means: the middleware's own work per model request
(``MemoryPlugin.section``: version checks, and on a miss the reads, the count and the cut),
and a whole agent call (two model requests, one tool, a save, in-memory store) next to the
same call without the plugins. Modes: files unchanged on local disk (the cache answers),
files unchanged on ``memory://``, and a 100 KB MEMORY.md edited before every request (every
request reads, counts and cuts). Files are left alone for ``RACY_SECONDS`` before measuring:
a file changed in the last two seconds is re-read on every request by design.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from typing import Any

import anyio
from hookagent import (
    Agent,
    AgentConfig,
    InMemoryAgentStateStore,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    ToolUseBlock,
)
from hookagent_memory import MemoryPlugin
from hookagent_workspace import WorkspacePlugin
from hookagent_workspace.workspace import RACY_SECONDS


class Model:
    name = "bench"

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        if request.messages[-1].role == "user":
            return ModelResponse(Msg.assistant([ToolUseBlock("c1", "lookup", {"key": 1})]))
        return ModelResponse(Msg.assistant("done"))


async def lookup(key: int) -> str:
    """Look a key up."""
    return "x" * 200


FILES = {
    "AGENTS.md": "Answer briefly. Run the tests before saying done.\n" * 20,
    "MEMORY.md": "".join(f"## 2026-11-{i % 28 + 1:02d}\nnote {i}\n" for i in range(40)),
    "KNOWLEDGE.md": "The service listens on 8080.\n" * 30,
}
BIG = "".join(f"## 2026-11-{i % 28 + 1:02d}\nnote number {i:05d}\n" for i in range(3600))


def config(url: str | None, memory: MemoryPlugin | None) -> AgentConfig:
    plugins: list[Any] = [] if url is None else [WorkspacePlugin(url=url, scope="user")]
    if memory is not None:
        plugins.append(memory)
    return AgentConfig(
        model=Model(),
        tools=[lookup],
        plugins=plugins,
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )


async def fill(cfg: AgentConfig, files: dict[str, str]) -> None:
    ws = cfg.kernel.workspace(RuntimeContext(user_id="u", session_id="s"))
    assert ws is not None
    for path, text in files.items():
        await ws.write_text(path, text)


async def per_request(cfg: AgentConfig, memory: MemoryPlugin, n: int, edit: bool) -> float:
    agent: Agent = cfg.build()
    ctx = RuntimeContext(user_id="u", session_id="s").put(Agent, agent)
    ws = cfg.kernel.workspace(ctx)
    assert ws is not None
    total = 0.0
    for i in range(n):
        if edit:
            await ws.write_text("MEMORY.md", BIG + f"edit {i}\n")
        started = time.perf_counter()
        section = await memory.section(ctx, cfg.kernel)
        total += time.perf_counter() - started
        assert section
    return total / n * 1e6


async def per_call(cfg: AgentConfig, n: int) -> float:
    async with cfg.build() as agent:
        ctx = RuntimeContext(user_id="u", session_id="s")
        await agent.call("warm", ctx)
        started = time.perf_counter()
        for _ in range(n):
            await agent.call("go", RuntimeContext(user_id="u", session_id="s"))
        return (time.perf_counter() - started) / n * 1e6


async def main(calls: int, repeats: int) -> None:
    tmp = tempfile.mkdtemp(prefix="hookagent-memory-bench-")
    modes = {
        "local disk, unchanged": (tmp, FILES, False),
        "memory://, unchanged": (f"memory://bench-{uuid.uuid4().hex}", FILES, False),
        "local disk, 100 KB MEMORY.md edited each request": (
            tmp + "/big",
            {"MEMORY.md": BIG},
            True,
        ),
    }
    made = {}
    for name, (url, files, edit) in modes.items():
        memory = MemoryPlugin()
        cfg = config(url, memory)
        await fill(cfg, files)
        made[name] = (cfg, memory, edit)
    await anyio.sleep(RACY_SECONDS + 0.2)  # let every file age past the racy window
    print(f"load average {os.getloadavg()[0]:.2f} ({os.cpu_count()} cpus)")
    baseline = min([await per_call(config(None, None), calls) for _ in range(repeats)])
    print(f"{'agent call without the plugins':55s} {baseline:8.1f} us/call")
    for name, (cfg, memory, edit) in made.items():
        n = max(calls // 10, 20) if edit else calls
        section = min([await per_request(cfg, memory, n, edit) for _ in range(repeats)])
        line = f"{name:55s} {section:8.1f} us/request (memory.section)"
        if not edit:
            call = min([await per_call(cfg, calls) for _ in range(repeats)])
            line += f"  {call:8.1f} us/call (+{call - baseline:.1f})"
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main, args.calls, args.repeats)
