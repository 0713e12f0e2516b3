"""Reading and changing one session's plan mode: the section, the view, the event.

Everything that changes plan mode (the tools, the application API inside a call) goes
through ``change`` so that the stored section, the call's view and the ``plan_mode_changed``
run event never disagree.
"""

from __future__ import annotations

import weakref
from typing import Any

import attrs
from hookagent import Agent, AgentState, RuntimeContext, emit_event

from .errors import PlanModeError
from .options import PLUGIN_NAME, PlanModeOptions
from .section import SECTION, PlanModeContext
from .view import PlanModeView, current, load_view

EVENT = "plan_mode_changed"

_OPTIONS: weakref.WeakKeyDictionary[Any, PlanModeOptions] = weakref.WeakKeyDictionary()
"""The validated options of each prepared configuration, keyed by its kernel."""


def remember_options(kernel: Any, options: PlanModeOptions) -> None:
    _OPTIONS[kernel] = options


def options_of(agent: Agent) -> PlanModeOptions:
    """The options of the agent's configuration (validated once, at configure time)."""
    found = _OPTIONS.get(agent.kernel)
    if found is None:
        found = PlanModeOptions.parse(agent.config.plugin_options.get(PLUGIN_NAME))
        _OPTIONS[agent.kernel] = found
    return found


def read_section(state: AgentState) -> PlanModeContext:
    """The session's section in either stored shape (inactive when absent).

    Read as raw JSON (``state.extensions``, where plugin sections live) rather than through
    ``get_section(name, cls)``: the old minimal shape must be upcast, not refused."""
    return PlanModeContext.from_json(state.extensions.get(SECTION))


def write_section(state: AgentState, section: PlanModeContext) -> None:
    state.put_section(SECTION, section.to_json())


def call_view(ctx: RuntimeContext) -> PlanModeView:
    """The running call's view (loaded now if a hook ordering left it unset)."""
    view = current(ctx)
    if view is not None:
        return view
    agent = ctx.get(Agent)
    state = ctx.agent_state
    if agent is None or state is None:
        raise PlanModeError("plan mode: no running call on this context")
    return load_view(ctx, read_section(state), options_of(agent))


async def change(
    ctx: RuntimeContext, view: PlanModeView, section: PlanModeContext, *, by: str
) -> PlanModeView:
    """Store ``section`` on the call's state, refresh the view, emit the event if the mode
    moved. Saved with the call (a tool cannot take the session's gate it already holds)."""
    state = ctx.agent_state
    if state is None:
        raise PlanModeError("plan mode: no running call on this context")
    write_section(state, section)
    new = view.evolve(section)
    ctx.put(PlanModeView, new)
    if new.active != view.active:
        await emit_event(
            ctx,
            EVENT,
            active=new.active,
            plan_file=section.current_plan_file,
            by=by,
        )
    return new


def entered(section: PlanModeContext) -> PlanModeContext:
    return attrs.evolve(section, plan_active=True)


def left(section: PlanModeContext) -> PlanModeContext:
    return attrs.evolve(section, plan_active=False)
