"""hookagent-permissions: allow / deny / ask rules and modes for tool calls, kept per slot.

The plugin is ``hookagent_permissions.plugin`` (entry point ``permissions``); the admin API
(``set_permission_mode``, ``replace_permission_context``, ``add_rule``, ``remove_rule``, ...
and their ``*_sync`` twins) is re-exported here. ``docs/permissions.md`` has the rule
grammar and the decision table.
"""

from .admin import (
    add_rule,
    add_rule_sync,
    add_working_directory,
    add_working_directory_sync,
    get_permission_context,
    get_permission_context_sync,
    remove_rule,
    remove_rule_sync,
    remove_working_directory,
    remove_working_directory_sync,
    replace_permission_context,
    replace_permission_context_sync,
    set_permission_mode,
    set_permission_mode_sync,
)
from .engine import Engine, Verdict
from .errors import (
    InvalidPermissionContext,
    InvalidPermissionMode,
    InvalidPermissionOptions,
    InvalidPermissionRule,
    InvalidWorkingDirectory,
    PermissionsError,
    RuleNotFound,
)
from .section import MODES, SECTION, PermissionContext, PermissionRule, WorkingDirectory, from_json

__all__ = [
    "MODES",
    "SECTION",
    "Engine",
    "InvalidPermissionContext",
    "InvalidPermissionMode",
    "InvalidPermissionOptions",
    "InvalidPermissionRule",
    "InvalidWorkingDirectory",
    "PermissionContext",
    "PermissionRule",
    "PermissionsError",
    "RuleNotFound",
    "Verdict",
    "WorkingDirectory",
    "add_rule",
    "add_rule_sync",
    "add_working_directory",
    "add_working_directory_sync",
    "from_json",
    "get_permission_context",
    "get_permission_context_sync",
    "remove_rule",
    "remove_rule_sync",
    "remove_working_directory",
    "remove_working_directory_sync",
    "replace_permission_context",
    "replace_permission_context_sync",
    "set_permission_mode",
    "set_permission_mode_sync",
]
