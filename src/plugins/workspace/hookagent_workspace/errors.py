"""The workspace plugin's errors.

The ones the kernel's ``Workspace`` contract names (bad path, missing file, limit, and their
base ``WorkspaceError``) are the kernel's own classes, so a caller catches them without
knowing which plugin serves the workspace; the rest are this plugin's refinements of them.
"""

from __future__ import annotations

from hookagent.errors import (
    ConfigurationError,
    WorkspaceError,
    WorkspaceFileNotFound,
    WorkspaceLimitExceeded,
    WorkspacePathError,
)

__all__ = [
    "EditError",
    "NoWorkspace",
    "NotADirectory",
    "NotAFile",
    "NotText",
    "PatternError",
    "ToolInputError",
    "WorkspaceError",
    "WorkspaceFileNotFound",
    "WorkspaceLimitExceeded",
    "WorkspaceOptionsError",
    "WorkspacePathError",
    "WorkspaceUnavailable",
]


class NotAFile(WorkspacePathError):
    """The path names a directory (or a device, FIFO or socket), not a regular file."""


class NotADirectory(WorkspacePathError):
    """The path (or one of its parents) names a file where a directory is needed."""


class NotText(WorkspaceError, ValueError):
    """The file is not UTF-8 text (the file tools handle text only)."""


class EditError(WorkspaceError, ValueError):
    """An ``edit_file`` whose old text is missing, ambiguous, or equal to the new text."""


class PatternError(WorkspaceError, ValueError):
    """A glob or grep pattern that is malformed or too costly to run (nested repetition)."""


class WorkspaceUnavailable(WorkspaceError):
    """The filesystem failed (I/O error, remote error); the operation's outcome is unknown."""


class WorkspaceOptionsError(ConfigurationError):
    """``plugin_options["workspace"]`` (or a ``WorkspacePlugin`` argument) that cannot be used."""


class ToolInputError(WorkspaceError, ValueError):
    """A file tool's argument out of range (an offset past the end, a limit under 1)."""


class NoWorkspace(WorkspaceError):
    """A file tool was called where no workspace is configured for the call."""
