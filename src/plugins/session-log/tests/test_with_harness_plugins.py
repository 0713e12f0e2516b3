"""The real tasks and permissions plugins on a session log: their changes are facts in the
log (``task/changed``, ``permission/changed``, ``interaction/requested``), and an ASK
answered with "always" survives a rebuild."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import Approve, ModelRequest, ModelResponse, Msg
from hookagent.sessionlog import InMemorySessionLog
from hookagent.testing import tool_call
from hookagent_permissions import plugin as permissions
from hookagent_session_log import SessionLogAdmin
from hookagent_tasks import plugin as tasks
from sessionlog_support import ctx, make_config

pytestmark = pytest.mark.anyio


async def deploy(env: str) -> str:
    """Deploy (not read-only: the permissions plugin asks first in default mode)."""
    return f"deployed to {env}"


class Script:
    async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(Msg.assistant(f"saw {last.tool_results[0].state}"))
        if last.text == "plan":
            return ModelResponse(tool_call("todo_write", todos=[{"content": "ship it", "status": "in_progress"}]))
        return ModelResponse(tool_call("deploy", env="prod"))


def config(log: InMemorySessionLog) -> Any:
    return make_config(
        log,
        Script(),
        tools=[deploy],
        tool_groups=["tasks"],
        plugins=[tasks, permissions],
        plugin_options={"permissions": {"mode": "default"}, "tasks": {}},
    )


async def test_task_and_permission_changes_are_facts_and_survive_a_rebuild(
    log: InMemorySessionLog,
) -> None:
    agent = config(log).build()
    admin = SessionLogAdmin(log)
    asked = await agent.call("plan", ctx())  # todo_write is not read-only: asked first
    [todo] = asked.metadata["pending"]
    done = await agent.call(None, ctx(), answers=[Approve(todo["tool_use_id"], remember=True)])
    assert done.text == "saw success"
    assert [e.type for e in await admin.events("u", "s", types=["task/"])] == ["task/changed"]
    assert [e.type for e in await admin.events("u", "s", types=["permission/"])] == ["permission/changed"]

    suspended = await agent.call("deploy", ctx())
    assert suspended.metadata["generate_reason"] == "SUSPENDED"
    [pending] = suspended.metadata["pending"]
    requested = await admin.events("u", "s", types=["interaction/"])
    assert requested[-1].payload == {"ids": [pending["tool_use_id"]]}

    fresh = config(log).build()  # another process: nothing in memory
    answered = await fresh.call(None, ctx(), answers=[Approve(pending["tool_use_id"])])
    assert answered.text == "saw success"
    rebuilt = await config(log).build().get_agent_state("u", "s")
    rules = rebuilt.extensions["permission_context"]
    assert "todo_write" in str(rules)  # the "always" rule came back from the log
    assert "ship it" in str(rebuilt.extensions["tasks_context"])
    again = await config(log).build().call("plan", ctx())  # allowed now: no question
    assert again.text == "saw success"
