"""Typed errors of the permissions plugin: every bad mode, rule or option has its own class."""

from __future__ import annotations

from hookagent.errors import AgentError, ConfigurationError, InvalidState


class PermissionsError(AgentError, ValueError):
    """Base of every error the permissions plugin raises on purpose."""


class InvalidPermissionMode(PermissionsError):
    """A mode that is not default, accept_edits, explore, bypass or dont_ask."""


class InvalidPermissionRule(PermissionsError):
    """A rule whose tool name, behavior, rule_content or source cannot be used."""


class RuleNotFound(PermissionsError):
    """``remove_rule`` named a rule the slot does not hold."""


class InvalidWorkingDirectory(PermissionsError):
    """A working directory that is not an absolute, clean POSIX path."""


class InvalidPermissionContext(InvalidState):
    """A stored ``permission_context`` section that does not fit (names the field)."""


class InvalidPermissionOptions(PermissionsError, ConfigurationError):
    """``plugin_options["permissions"]`` that cannot be used (names the key)."""
