"""The plan-mode plugin's own errors.

Tools raise them (the kernel turns a raised error into an ``error`` result the model reads:
``tool 'plan_exit' failed: NotInPlanMode: ...``); the application API and the CLI raise them
to their callers.
"""

from __future__ import annotations

from hookagent.errors import AgentError, InvalidState


class PlanModeError(AgentError):
    """Base of every plan-mode error."""


class InvalidPlanModeContext(PlanModeError, InvalidState):
    """The stored ``plan_mode_context`` section does not fit (names the field and why)."""


class PlanModeOptionsError(PlanModeError, ValueError):
    """``plugin_options["plan-mode"]`` holds something that cannot be used."""


class NotInPlanMode(PlanModeError):
    """A plan tool that needs plan mode (``plan_write``, ``plan_exit``) ran outside it."""


class InheritedPlanMode(PlanModeError):
    """A subagent tried to leave the plan mode it inherited: only the parent can end it."""


class PlanTooLarge(PlanModeError):
    """The plan text is over the configured ``max_plan_chars``."""
