"""What a permission decision costs: the engine alone, and a whole warm agent call.

    .venv/bin/python src/plugins/permissions/bench/decide.py

Prints microseconds per decision (engine) and per call (an in-memory agent whose model asks
for one tool call, then answers), with the plugin off, on with no rules, on with 60 rules,
and on with a path rule that resolves a path argument on the filesystem. Note the machine's
load (``uptime``) next to the figures: they move with it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import anyio
import hookagent_permissions.plugin as permissions
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext, tool
from hookagent.testing import ScriptedModel, tool_call
from hookagent_permissions import Engine, PermissionContext, PermissionRule, WorkingDirectory

WORK = os.path.realpath(tempfile.mkdtemp())
os.makedirs(os.path.join(WORK, "src"), exist_ok=True)


def many_rules() -> list[dict[str, Any]]:
    rules = []
    for i in range(20):
        rules.append(
            {"tool_name": f"tool_{i}", "behavior": "deny", "rule_content": f"command:rm {i}"}
        )
        rules.append({"tool_name": f"mcp__s{i}__*", "behavior": "ask"})
        rules.append(
            {"tool_name": "write_file", "behavior": "allow", "rule_content": f"arg:/mode=m{i}"}
        )
    return rules


def per_op(fn: Callable[[], Any], n: int) -> float:
    """Median of 5 rounds, microseconds per operation."""
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


def engine_figures() -> None:
    plain = Engine.build(PermissionContext())
    pc = PermissionContext(working_directories={"w": WorkingDirectory(WORK)})
    for r in many_rules():
        pc = pc.with_rule(PermissionRule(r["tool_name"], r.get("rule_content"), r["behavior"], "b"))
    big = Engine.build(pc)
    path = Engine.build(pc.with_rule(PermissionRule("write_file", "path:src/**", "allow", "b")))
    args = {"path": "src/a.py", "text": "x"}
    print(
        f"engine, no rules:        {per_op(lambda: plain.decide('write_file', False, args), 20000):7.1f} us/decision"
    )
    print(
        f"engine, 60 rules:        {per_op(lambda: big.decide('write_file', False, args), 20000):7.1f} us/decision"
    )
    print(
        f"engine, + a path rule:   {per_op(lambda: path.decide('write_file', False, args), 5000):7.1f} us/decision"
    )


@tool(read_only=False)
def write_file(path: str, text: str) -> str:
    """Write."""
    return "ok"


async def agent_calls(options: dict[str, Any] | None, n: int) -> float:
    """Median of 5 rounds of ``n`` warm calls, microseconds per call (on the event loop)."""
    model = ScriptedModel(default="done")
    plugins = [permissions] if options is not None else []
    agent = AgentConfig(
        model=model,
        tools=[write_file],
        plugins=plugins,
        plugin_options={"permissions": options} if options is not None else {},
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()

    async def call(i: int) -> None:
        model.queue(tool_call("write_file", path="src/a.py", text="x"), "done")
        await agent.call("go", RuntimeContext(user_id="u", session_id=f"s{i % 50}"))

    for i in range(60):
        await call(i)
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for i in range(n):
            await call(i)
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


CASES: dict[str, dict[str, Any] | None] = {
    "plugin off": None,
    "on, one allow rule": {"rules": [{"tool_name": "write_file", "behavior": "allow"}]},
    "on, 60 rules + allow": {
        "rules": [*many_rules(), {"tool_name": "write_file", "behavior": "allow"}]
    },
    "on, path rule": {
        "rules": [{"tool_name": "write_file", "behavior": "allow", "rule_content": "path:src/**"}],
        "working_directories": {"w": WORK},
    },
}


def call_figures() -> None:
    base = None
    for name, options in CASES.items():
        us = anyio.run(agent_calls, options, 300)
        base = us if base is None else base
        print(f"agent call, {name:22} {us:8.1f} us/call  (+{us - base:6.1f})")


if __name__ == "__main__":
    print(f"load average: {os.getloadavg()}")
    engine_figures()
    call_figures()
