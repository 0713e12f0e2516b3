"""With the other harness plugins installed (from their entry points): plan mode lets
todo_write through while it blocks other writes, and the TASK_STATE view (order 300) and the
plan-mode banner (order 400) both reach the model."""

from __future__ import annotations

import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import enter_plan_mode
from hookagent_tasks import TASK_STATE_ID, TaskAdmin, TaskScope


def deploy(env: str) -> str:
    """Deploy (changes things: not read-only)."""
    return f"deployed {env}"


@pytest.mark.anyio
async def test_todo_write_in_plan_mode_and_both_views_reach_the_model() -> None:
    model = ScriptedModel(
        [
            tool_call(
                "todo_write", todos=[{"content": "plan the deploy", "status": "in_progress"}]
            ),
            tool_call("deploy", env="prod"),
            "planned",
        ]
    )
    config = AgentConfig(
        model=model, tools=[deploy], tool_groups=["tasks"], state_store=InMemoryAgentStateStore()
    )
    agent = config.build()
    ctx = RuntimeContext(user_id="ann", session_id="ops")
    await TaskAdmin(agent).begin_task(ctx, TaskScope("OPS-1", "deploy safely"), expected_revision=0)
    await enter_plan_mode(agent, ctx)
    reply = await agent.call("deploy to prod", RuntimeContext(user_id="ann", session_id="ops"))
    assert reply.metadata["generate_reason"] == "ALL_TOOLS_DENIED"  # the deploy step
    stored = await agent.get_agent_state("ann", "ops")
    todo, blocked = [m.tool_results[0] for m in stored.context if m.role == "tool"]
    assert todo.state == "success" and todo.text.startswith("Todo list updated (revision 2)")
    assert blocked.state == "denied"
    first = model.requests[0]
    assert [m for m in first.messages if m.id == TASK_STATE_ID]
    assert first.system is not None and "Task state" in first.system
    assert "plan mode" in first.system.lower()
    tasks = await TaskAdmin(agent).get(ctx)
    assert tasks.tasks[0].subject == "plan the deploy"
