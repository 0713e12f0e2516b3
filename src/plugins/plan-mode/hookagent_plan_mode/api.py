"""The application's side of plan mode: enter, exit and read it for one session.

Outside a call each change goes through ``agent.update_agent_state``: under the session's
gate (it waits for a call running there to finish), a compare-and-set save, persisted at
once, so another process sees it at its next call. Given the context of a *running* call (a
tool or hook of the same session), the change is made on that call's state instead (it is
saved with the call; waiting for the gate the call holds would never end).
"""

from __future__ import annotations

from typing import Any

import attrs
from hookagent import Agent, AgentState, RuntimeContext

from .mode import call_view, change, entered, left, read_section, write_section
from .plans import Plan, load_plan
from .section import PlanModeContext


@attrs.frozen
class PlanModeExit:
    """What ``exit_plan_mode`` did: whether the session was in plan mode, and its plan."""

    was_active: bool
    plan: Plan


def _in_call(ctx: RuntimeContext) -> bool:
    return ctx.agent_state is not None


async def get_plan_mode(agent: Agent, ctx: RuntimeContext) -> PlanModeContext:
    """The session's stored plan mode (inactive for a session that does not exist)."""
    if _in_call(ctx):
        return call_view(ctx).section
    state = await agent.get_agent_state(ctx.user_id, ctx.session_id)
    return read_section(state)


async def read_plan(agent: Agent, ctx: RuntimeContext) -> Plan:
    """The session's current plan (from its workspace file, else from the section)."""
    return await load_plan(agent, ctx, await get_plan_mode(agent, ctx))


async def enter_plan_mode(agent: Agent, ctx: RuntimeContext) -> PlanModeContext:
    """Put the session in plan mode now (creating the session if it does not exist yet, so an
    application can start a conversation in plan mode). Returns the stored section."""
    if _in_call(ctx):
        view = call_view(ctx)
        return (await change(ctx, view, entered(view.section), by="api")).section
    out: dict[str, PlanModeContext] = {}

    def mutate(state: AgentState) -> None:
        out["section"] = entered(read_section(state))
        write_section(state, out["section"])

    await agent.update_agent_state(ctx, "plan mode: entered", mutate, create=True)
    return out["section"]


async def exit_plan_mode(agent: Agent, ctx: RuntimeContext) -> PlanModeExit:
    """End the session's plan mode now and return its plan (a session that was not in plan
    mode, or does not exist, is left as it is: ``was_active`` is False)."""
    if _in_call(ctx):
        view = call_view(ctx)
        plan = await load_plan(agent, ctx, view.section)
        was = view.section.plan_active
        if was:
            await change(ctx, view, left(view.section), by="api")
        return PlanModeExit(was, plan)
    out: dict[str, Any] = {"was": False, "section": PlanModeContext()}

    def mutate(state: AgentState) -> None:
        section = read_section(state)
        out["was"], out["section"] = section.plan_active, section
        if section.plan_active:
            write_section(state, left(section))

    await agent.update_agent_state(ctx, "plan mode: exited", mutate)
    return PlanModeExit(out["was"], await load_plan(agent, ctx, out["section"]))


def enter_plan_mode_sync(agent: Agent, ctx: RuntimeContext) -> PlanModeContext:
    async def run() -> PlanModeContext:
        return await enter_plan_mode(agent, ctx)

    return agent.kernel.portal().call(run)


def exit_plan_mode_sync(agent: Agent, ctx: RuntimeContext) -> PlanModeExit:
    async def run() -> PlanModeExit:
        return await exit_plan_mode(agent, ctx)

    return agent.kernel.portal().call(run)


def get_plan_mode_sync(agent: Agent, ctx: RuntimeContext) -> PlanModeContext:
    async def run() -> PlanModeContext:
        return await get_plan_mode(agent, ctx)

    return agent.kernel.portal().call(run)


def read_plan_sync(agent: Agent, ctx: RuntimeContext) -> Plan:
    async def run() -> Plan:
        return await read_plan(agent, ctx)

    return agent.kernel.portal().call(run)
