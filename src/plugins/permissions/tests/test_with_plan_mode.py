"""Cooperation with hookagent-plan-mode (a test-only dependency), through the kernel seams only.

Plan mode (tool order 100) is outside permissions (200): what it blocks is denied before a
rule is read; an ``ask`` rule on ``plan_exit`` makes leaving plan mode wait for a person.
"""

from __future__ import annotations

from typing import Any

import hookagent_permissions.plugin as permissions
import hookagent_plan_mode.plugin as plan_mode
from hookagent import AgentConfig, Approve, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import get_plan_mode_sync

RUNS: list[str] = []


def deploy(env: str) -> str:
    """Deploy."""
    RUNS.append(env)
    return "deployed"


def build(steps: list[Any], rules: list[dict[str, Any]]) -> Any:
    return AgentConfig(
        model=ScriptedModel(steps, default="ok"),
        tools=[deploy],
        tool_groups=["plan-mode"],
        plugins=[plan_mode, permissions],
        plugin_options={"permissions": {"mode": "default", "rules": rules}},
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()


def test_an_ask_rule_on_plan_exit_keeps_plan_mode_until_approved() -> None:
    rules = [
        {"tool_name": "plan_*", "behavior": "allow", "source": "ops"},
        {"tool_name": "plan_exit", "behavior": "ask", "source": "policy"},  # ask wins
    ]
    agent = build(
        [
            tool_call("plan_enter"),
            tool_call("plan_write", content="1. deploy"),
            tool_call("plan_exit"),
            "leaving",
        ],
        rules,
    )
    ctx = RuntimeContext(user_id="ann", session_id="p")
    reply = agent.call_sync("plan it", ctx)
    [question] = reply.metadata["pending"]
    assert question["tool"] == "plan_exit" and question["data"]["source"] == "policy"
    assert get_plan_mode_sync(agent, ctx).plan_active
    agent.call_sync(answers=[Approve(question["tool_use_id"])], ctx=ctx.derive(run_id=None))
    assert not get_plan_mode_sync(agent, ctx).plan_active


def test_plan_mode_denies_before_an_allow_rule_is_read() -> None:
    RUNS.clear()
    rules = [
        {"tool_name": "plan_*", "behavior": "allow", "source": "ops"},
        {"tool_name": "deploy", "behavior": "allow", "source": "ops"},
    ]
    agent = build([tool_call("plan_enter"), tool_call("deploy", env="prod"), "blocked"], rules)
    agent.call_sync("go", RuntimeContext(user_id="ann", session_id="q"))
    assert RUNS == []
