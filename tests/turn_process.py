"""One process of the cross-process turn test: start a turn, or answer the suspended one.

    python turn_process.py STATE_DIR LOG start
    python turn_process.py STATE_DIR LOG approve|reject|external TOOL_USE_ID TURN_ID

Prints the reply's metadata and ids as one JSON line. The tool appends to LOG each time it
runs, so the test can count executions across processes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hookagent import (
    AgentConfig,
    Approve,
    ExternalResult,
    Reject,
    RuntimeContext,
    ToolSuspended,
    ask,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call

state_dir, log_path, action = sys.argv[1], Path(sys.argv[2]), sys.argv[3]


def deploy(env: str) -> str:
    """Deploy."""
    with log_path.open("a") as f:
        f.write(f"deploy {env}\n")
    return f"deployed to {env}"


def wait_for_ci(branch: str) -> str:
    """Start CI and wait for its result."""
    raise ToolSuspended(f"CI started for {branch}")


class Confirm:
    @hookimpl
    def hookagent_wrap_tool_call(self) -> Any:
        async def middleware(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
            if call.use.name == "deploy" and not call.approved:
                return ask(call, "deploy?")
            return await call_next(call)

        return middleware


def answer_with_last_result(request: Any) -> str:
    last = request.messages[-1]
    return "; ".join(f"{r.state}: {r.text}" for r in last.tool_results) or "?"


first = tool_call("wait_for_ci", branch="main") if action == "external" else None
script = [tool_call("deploy", env="prod")] if action == "start" else []
model = ScriptedModel(script, default=answer_with_last_result)
config = AgentConfig(
    model=model, tools=[deploy, wait_for_ci], plugins=[Confirm()], state_store=state_dir
)
if action in ("start", "start-ci"):
    if action == "start-ci":
        model.queue(tool_call("wait_for_ci", branch="main"))
    ctx = RuntimeContext(user_id="u", session_id="s")
    reply = config.build().call_sync("ship it", ctx)
else:
    uid, turn = sys.argv[4], sys.argv[5]
    answer = {
        "approve": Approve(uid),
        "reject": Reject(uid, "no"),
        "external": ExternalResult(uid, "CI green"),
    }[action]
    ctx = RuntimeContext(user_id="u", session_id="s", turn_id=turn)
    reply = config.build().call_sync(answers=[answer], ctx=ctx)
print(
    json.dumps(
        {
            "meta": reply.metadata,
            "text": reply.text,
            "run_id": ctx.run_id,
            "turn_id": ctx.turn_id,
            "requests": len(model.requests),
        }
    )
)
config.close()
