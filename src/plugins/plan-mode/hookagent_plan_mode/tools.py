"""The model's plan tools: ``plan_enter``, ``plan_write``, ``plan_exit``.

They change the state of the call they run in (saved with it: a tool runs under the
session's gate, so it cannot go through ``update_agent_state``). None is read-only (each
changes the session or the workspace); plan mode lets them through by name. A refusal is a
raised plan-mode error, which the model reads as ``tool 'plan_exit' failed: NotInPlanMode:
...``.
"""

from __future__ import annotations

from hookagent import Agent, RuntimeContext, emit_event

from .errors import InheritedPlanMode, NotInPlanMode, PlanModeError
from .mode import call_view, change, entered, left
from .plans import load_plan, save_plan


def _agent(ctx: RuntimeContext) -> Agent:
    agent = ctx.get(Agent)
    if agent is None:
        raise PlanModeError("plan tools run inside an agent call")
    return agent


async def plan_enter(ctx: RuntimeContext) -> str:
    """Enter plan mode before a change that needs a plan: investigate with read-only tools,
    write the plan with plan_write, then call plan_exit. Tools that change things are blocked
    until then."""
    view = call_view(ctx)
    if view.active:
        return "Plan mode is already active. Write the plan with plan_write, then call plan_exit."
    await change(ctx, view, entered(view.section), by="plan_enter")
    return (
        "Plan mode is active: tools that change things are blocked. Investigate with "
        "read-only tools, write the plan with plan_write, then call plan_exit."
    )


async def plan_write(content: str, ctx: RuntimeContext) -> str:
    """Write the whole plan (replacing the previous one) while in plan mode: the steps you
    will take, the files you will change, how you will check the result."""
    view = call_view(ctx)
    if not view.active:
        raise NotInPlanMode("plan_write works in plan mode; call plan_enter first")
    agent = _agent(ctx)
    section, where = await save_plan(agent, ctx, view.section, content, view.options)
    await change(ctx, view, section, by="plan_write")
    await emit_event(ctx, "plan_written", plan_file=section.current_plan_file, chars=len(content))
    return f"Plan saved to {where} ({len(content)} characters). Call plan_exit when it is ready."


async def plan_exit(ctx: RuntimeContext) -> str:
    """Present the plan and end plan mode; the tools that were blocked work again after it."""
    view = call_view(ctx)
    if view.inherited:
        raise InheritedPlanMode(
            "this run inherited plan mode from its parent run; only the parent can end it"
        )
    if not view.active:
        raise NotInPlanMode("plan mode is not active; there is nothing to exit")
    plan = await load_plan(_agent(ctx), ctx, view.section)
    await change(ctx, view, left(view.section), by="plan_exit")
    if plan.text is None:
        return f"Plan mode ended. There is no plan to show: {plan.missing}."
    return f"Plan mode ended. The plan ({plan.location}):\n\n{plan.text}"


GROUP = "plan-mode"
"""The tool group of the plan tools: offered to agents that enable it (``AgentConfig(
tool_groups=["plan-mode"])`` or the session's ``tool_context.activated_groups``). Without it
plan mode is the application's alone (``enter_plan_mode`` / ``exit_plan_mode``, the CLI)."""

TOOLS = (plan_enter, plan_write, plan_exit)
