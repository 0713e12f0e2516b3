"""Plan mode for hookagent: a persisted mode in which every tool that is not read-only is
denied until the plan is agreed (see ``docs/plan-mode.md``)."""

from __future__ import annotations

from .api import (
    PlanModeExit,
    enter_plan_mode,
    enter_plan_mode_sync,
    exit_plan_mode,
    exit_plan_mode_sync,
    get_plan_mode,
    get_plan_mode_sync,
    read_plan,
    read_plan_sync,
)
from .errors import (
    InheritedPlanMode,
    InvalidPlanModeContext,
    NotInPlanMode,
    PlanModeError,
    PlanModeOptionsError,
    PlanTooLarge,
)
from .options import DEFAULT_ALLOWED, PLAN_TOOLS, PlanModeOptions
from .plans import Plan
from .section import SECTION, PlanModeContext
from .tools import GROUP
from .view import PlanModeView

__all__ = [
    "DEFAULT_ALLOWED",
    "GROUP",
    "PLAN_TOOLS",
    "SECTION",
    "InheritedPlanMode",
    "InvalidPlanModeContext",
    "NotInPlanMode",
    "Plan",
    "PlanModeContext",
    "PlanModeError",
    "PlanModeExit",
    "PlanModeOptions",
    "PlanModeOptionsError",
    "PlanModeView",
    "PlanTooLarge",
    "enter_plan_mode",
    "enter_plan_mode_sync",
    "exit_plan_mode",
    "exit_plan_mode_sync",
    "get_plan_mode",
    "get_plan_mode_sync",
    "read_plan",
    "read_plan_sync",
]
