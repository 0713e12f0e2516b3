"""One process of the cross-process todo test: run steps FIRST..LAST of a scripted 20-step
session, each step one call whose model first records what it sees of the todo list, then
rewrites the list with todo_write.

    python tasks_process.py STORE_URL FIRST LAST

Prints one JSON object: per step, the visible list before it and the stored section after.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hookagent import AgentConfig, ModelRequest, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_tasks import SECTION, TASK_STATE_ID, parse_section

url, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def plan(step: int) -> list[dict[str, Any]]:
    """The list the model writes at ``step``: one item more every other step, the oldest
    ones completed, the newest in progress, an item dropped at step 15."""
    count = 2 + step // 2
    items = []
    for i in range(1, count + 1):
        if step >= 15 and i == 3:
            continue  # dropped
        status = "completed" if i < count - 1 else ("in_progress" if i == count - 1 else "pending")
        items.append(
            {
                "content": f"item {i}",
                "status": status,
                "priority": "high" if i % 3 == 0 else "medium",
            }
        )
    return items


def visible(request: ModelRequest) -> dict[str, Any]:
    """What the model sees of the list: the current full result, or the TASK_STATE block."""
    full = [
        b.text
        for m in request.messages
        for b in m.tool_results
        if b.name == "todo_write" and b.text.startswith("Todo list updated")
    ]
    state = [m.text for m in request.messages if m.id == TASK_STATE_ID]
    receipts = sum(
        1
        for m in request.messages
        for b in m.tool_results
        if b.text.startswith("Todo update recorded")
    )
    lines = (full[-1] if full else state[-1] if state else "").splitlines()
    return {
        "lines": [ln for ln in lines if ln.startswith("- [")],
        "full_results": len(full),
        "task_state": len(state),
        "receipts": receipts,
    }


seen: list[dict[str, Any]] = []
steps: list[Any] = []
for step in range(first, last + 1):
    steps.append(
        lambda request, step=step: (
            seen.append(visible(request)),
            tool_call("todo_write", todos=plan(step)),
        )[1]
    )
    steps.append(f"step {step} done")
config = AgentConfig(
    model=ScriptedModel(steps),
    tool_groups=["tasks"],
    state_store=url,  # the tasks plugin and the store plugins come from their entry points
)
agent = config.build()
out: list[dict[str, Any]] = []
for step in range(first, last + 1):
    ctx = RuntimeContext(user_id="walker", session_id="twenty-steps")
    reply = agent.call_sync(f"step {step}", ctx)
    state = agent.get_agent_state_sync("walker", "twenty-steps")
    tc = parse_section(state.extensions[SECTION])
    out.append(
        {
            "step": step,
            "reply": reply.text,
            "seen": seen[step - first],
            "revision": tc.revision,
            "tasks": [[t.id, t.subject, t.state, t.created_at, t.priority] for t in tc.tasks],
            "messages": len(state.context),
        }
    )
config.close()
print(json.dumps(out))
