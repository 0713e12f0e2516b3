"""Per-call cost of plan mode: a warm one-step call without the plugin, with it (plan mode
off), and in plan mode (the banner on every request). Prints the median of several rounds.

    .venv/bin/python src/plugins/plan-mode/bench/overhead.py [calls]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext, tool
from hookagent.testing import ScriptedModel
from hookagent_plan_mode import enter_plan_mode_sync
from hookagent_plan_mode import plugin as plan_mode_plugin


@tool(read_only=False)
def write(text: str) -> str:
    """Write."""
    return text


def agent(with_plugin: bool, model: ScriptedModel) -> Any:
    return AgentConfig(
        model=model,
        tools=[write],
        plugins=[plan_mode_plugin] if with_plugin else [],
        autoload_plugins=False,
        state_store=InMemoryAgentStateStore(),
    ).build()


def per_call(a: Any, n: int, session: str) -> float:
    ctx = RuntimeContext(user_id="bench", session_id=session)
    a.call_sync("warm", ctx)
    t = time.perf_counter()
    for _ in range(n):
        a.call_sync("hi", ctx.derive(run_id=None))
    return (time.perf_counter() - t) / n * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rows: dict[str, list[float]] = {
        "no plugin": [],
        "plugin, plan mode off": [],
        "plan mode on": [],
    }
    for _ in range(5):
        rows["no plugin"].append(per_call(agent(False, ScriptedModel(default="ok")), n, "a"))
        rows["plugin, plan mode off"].append(
            per_call(agent(True, ScriptedModel(default="ok")), n, "b")
        )
        on = agent(True, ScriptedModel(default="ok"))
        enter_plan_mode_sync(on, RuntimeContext(user_id="bench", session_id="c"))
        rows["plan mode on"].append(per_call(on, n, "c"))
    for name, values in rows.items():
        print(f"{name:36s} {statistics.median(values):.3f} ms/call")


if __name__ == "__main__":
    main()
