"""The call's plan mode, as a context attribute: read once at state load, cheap to consult.

``PlanModeView`` is put on the call's ``RuntimeContext`` when its state is loaded and replaced
whenever a plan tool changes the mode in that call. The middlewares read only it (one typed
attribute lookup per model request and tool call), never the stored section.

It is also how a **subagent inherits plan mode**: a subagent's context is derived from the
calling tool's context (``ctx.derive(...)``), and a derived context carries a copy of the
parent's attributes. When the subagent's state is loaded, a view it finds that was set by a
*different run that is still running* is its parent's: if that one is active, the subagent
runs in plan mode too (``inherited=True``), without writing anything to its own slot (when
the parent leaves plan mode, the subagent's session is not left stuck in it). A view left on
a context by a finished call (an application reusing a context) is stale and ignored.
"""

from __future__ import annotations

import attrs
from hookagent import AgentRun, RuntimeContext

from .options import PlanModeOptions
from .section import PlanModeContext


@attrs.frozen(eq=False)
class PlanModeView:
    """The plan mode of the run it was set for (never persisted, never sent to the model)."""

    active: bool
    inherited: bool
    section: PlanModeContext
    options: PlanModeOptions
    run: AgentRun | None = None
    """The run that set this view: its status tells a parent's view from a stale one."""
    step_active: bool = attrs.field(default=attrs.Factory(lambda v: v.active, takes_self=True))
    """Plan mode was active when the model asked for the current step's tool calls. Leaving
    plan mode takes effect at the next step: the other calls of the step that ran
    ``plan_exit`` were asked for in plan mode and stay blocked, whatever order (or
    parallelism) they run in. Entering takes effect at once."""

    @property
    def blocking(self) -> bool:
        return self.active or self.step_active

    def evolve(self, section: PlanModeContext) -> PlanModeView:
        """The view after a plan tool changed this session's section."""
        active = section.plan_active or self.inherited
        return attrs.evolve(
            self, section=section, active=active, step_active=self.step_active or active
        )

    def next_step(self) -> PlanModeView:
        """The view for a new model step (``step_active`` follows the mode again)."""
        return (
            self if self.step_active == self.active else attrs.evolve(self, step_active=self.active)
        )


def inherited_from(found: PlanModeView | None, run: AgentRun | None) -> bool:
    """Did the context arrive carrying an active plan mode from a running parent run?"""
    return (
        found is not None
        and found.blocking
        and found.run is not None
        and found.run is not run
        and found.run.status == "running"
    )


def load_view(
    ctx: RuntimeContext, section: PlanModeContext, options: PlanModeOptions
) -> PlanModeView:
    """Compute and attach the view of the call whose state was just loaded."""
    run = ctx.get(AgentRun)
    inherited = inherited_from(ctx.get(PlanModeView), run)
    view = PlanModeView(section.plan_active or inherited, inherited, section, options, run)
    ctx.put(PlanModeView, view)
    return view


def current(ctx: RuntimeContext) -> PlanModeView | None:
    """The view of the running call (None without the plugin). Every call's state load
    replaces whatever view its context arrived with, so the middlewares and tools, which
    run after it, always read their own call's."""
    return ctx.get(PlanModeView)
