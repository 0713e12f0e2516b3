"""One process of the cross-process ASK test: ``ask_worker.py STORE_DIR COUNTER STEP [ID]``.

Each step is a separate process (as a front end, a restart or another replica would be): it
builds its own agent on the shared JSON-file store, does one call and prints the reply's
metadata as JSON. The tool appends a line to COUNTER each time it really runs.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import hookagent_permissions.plugin as permissions
from hookagent import AgentConfig, Approve, Reject, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_store_jsonfile import LocalJsonFileStore

store_dir, counter, step = sys.argv[1:4]
answer_id = sys.argv[4] if len(sys.argv) > 4 else ""


def deploy(env: str) -> str:
    """Deploy the service."""
    with open(counter, "a") as f:
        f.write(env + "\n")
    return f"deployed to {env}"


def echo(request: Any) -> str:
    """The model says what it was given last: the tool results it sees."""
    results = [b for m in request.messages for b in m.tool_results]
    last = results[-1]
    return f"model saw {last.state}: {last.output[0].text}"


scripts = {
    "ask": [tool_call("deploy", env="prod")],
    "approve": [echo],
    "reject": [echo],
    "always": [echo],
    "again": [tool_call("deploy", env="dev"), echo],
}
agent = AgentConfig(
    model=ScriptedModel(scripts[step]),
    tools=[deploy],
    plugins=[permissions],
    plugin_options={"permissions": {"mode": "default"}},
    state_store=LocalJsonFileStore(store_dir),
    autoload_plugins=False,
).build()
ctx = RuntimeContext(user_id="ann", session_id="ops")
if step in ("ask", "again"):
    reply = agent.call_sync("deploy it", ctx)
else:
    answer = {
        "approve": Approve(answer_id),
        "reject": Reject(answer_id, "not today"),
        "always": Approve(answer_id, remember=True),
    }[step]
    reply = agent.call_sync(answers=[answer], ctx=ctx.derive(run_id=None))
print(json.dumps({"text": reply.text, "metadata": reply.metadata}, default=str))
