"""Where a plan lives: the plan file in the session's workspace, else the section itself.

With a workspace (``kernel.workspace(ctx)``, any plugin implementing ``hookagent_workspace``)
the plan is the file ``plan_file`` (default ``PLAN.md``): people read and edit it with their
own tools, the model re-reads it with the workspace's read tools, and ``plan_exit`` returns
the file as it is then, edits included.

Without one, the plan is kept in the section's ``plan_text``. Refusing ``plan_write`` there
would make plan mode unusable on the smallest installation, and it is the plan, not the file,
that people approve: the text stays with the session (bounded by ``max_plan_chars``), is
shown by ``hookagent plan show`` and returned by ``plan_exit``.
"""

from __future__ import annotations

import attrs
from hookagent import Agent, RuntimeContext, WorkspaceFileNotFound

from .errors import PlanTooLarge
from .options import PlanModeOptions
from .section import PlanModeContext


@attrs.frozen
class Plan:
    """A plan read back: its text (None when there is none) and where it was looked for."""

    text: str | None
    location: str
    missing: str | None = None
    """Why there is no text (never written, the file was removed, no workspace any more)."""


def check_size(text: str, options: PlanModeOptions) -> None:
    if len(text) > options.max_plan_chars:
        raise PlanTooLarge(
            f"the plan has {len(text)} characters, over the limit of {options.max_plan_chars}; "
            "shorten it (keep the steps, drop the detail)"
        )


async def save_plan(
    agent: Agent,
    ctx: RuntimeContext,
    section: PlanModeContext,
    text: str,
    options: PlanModeOptions,
) -> tuple[PlanModeContext, str]:
    """Write the plan; return the new section and a phrase saying where it went."""
    check_size(text, options)
    workspace = agent.kernel.workspace(ctx)
    if workspace is None:
        where = "the session's plan_mode_context (no workspace is installed)"
        return attrs.evolve(section, current_plan_file=None, plan_text=text), where
    await workspace.write_text(options.plan_file, text)
    where = f"{options.plan_file} in the workspace {workspace.url}"
    return attrs.evolve(section, current_plan_file=options.plan_file, plan_text=None), where


async def load_plan(agent: Agent, ctx: RuntimeContext, section: PlanModeContext) -> Plan:
    """The current plan, from the file the section names, else from the section."""
    path = section.current_plan_file
    if path is None:
        if section.plan_text is None:
            return Plan(None, "the session", "no plan was written (plan_write)")
        return Plan(section.plan_text, "the session's plan_mode_context")
    workspace = agent.kernel.workspace(ctx)
    if workspace is None:
        return Plan(None, path, f"the plan file {path} is in a workspace that is not installed")
    try:
        return Plan(await workspace.read_text(path), f"{path} in the workspace {workspace.url}")
    except WorkspaceFileNotFound:
        return Plan(None, path, f"the plan file {path} is no longer in the workspace")
