"""hookagent-permissions: allow / deny / ask rules and modes for tool calls, kept per slot."""

from .engine import Engine, Verdict
from .errors import (
    InvalidPermissionContext,
    InvalidPermissionMode,
    InvalidPermissionRule,
    InvalidWorkingDirectory,
    PermissionsError,
    RuleNotFound,
)
from .section import MODES, SECTION, PermissionContext, PermissionRule, WorkingDirectory

__all__ = [
    "MODES",
    "SECTION",
    "Engine",
    "InvalidPermissionContext",
    "InvalidPermissionMode",
    "InvalidPermissionRule",
    "InvalidWorkingDirectory",
    "PermissionContext",
    "PermissionRule",
    "PermissionsError",
    "RuleNotFound",
    "Verdict",
    "WorkingDirectory",
]
