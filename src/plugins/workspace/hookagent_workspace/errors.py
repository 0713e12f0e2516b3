"""The workspace plugin's errors.

The three the kernel's ``Workspace`` contract names (bad path, missing file, limit) are the
kernel's own classes, so a caller catches them without knowing which plugin serves the
workspace; the rest are this plugin's, all ``AgentError``s.
"""

from __future__ import annotations

from hookagent.errors import AgentError

# Until the kernel's harness seams land, these stand in for ``hookagent.WorkspacePathError``,
# ``hookagent.WorkspaceFileNotFound`` and ``hookagent.WorkspaceLimitExceeded``.


class WorkspacePathError(AgentError, ValueError):
    """A path that cannot be used: absolute, ``..``, a bad name, a symlink, an escape."""


class WorkspaceFileNotFound(AgentError, LookupError):
    """The file (or directory) a path names does not exist in the workspace."""


class WorkspaceLimitExceeded(AgentError):
    """A read, write or search that would go over one of the workspace's limits."""


class WorkspaceError(AgentError):
    """Base of the workspace plugin's own errors."""


class NotAFile(WorkspaceError, WorkspacePathError):
    """The path names a directory (or a device, FIFO or socket), not a regular file."""


class NotADirectory(WorkspaceError, WorkspacePathError):
    """The path (or one of its parents) names a file where a directory is needed."""


class NotText(WorkspaceError, ValueError):
    """The file is not UTF-8 text (the file tools handle text only)."""


class EditError(WorkspaceError, ValueError):
    """An ``edit_file`` whose old text is missing, ambiguous, or equal to the new text."""


class PatternError(WorkspaceError, ValueError):
    """A glob or grep pattern that is malformed or too costly to run (nested repetition)."""


class WorkspaceUnavailable(WorkspaceError):
    """The filesystem failed (I/O error, remote error); the operation's outcome is unknown."""


class WorkspaceOptionsError(WorkspaceError, ValueError):
    """``plugin_options["workspace"]`` (or a ``WorkspacePlugin`` argument) that cannot be used."""


class ToolInputError(WorkspaceError, ValueError):
    """A file tool's argument out of range (an offset past the end, a limit under 1)."""


class NoWorkspace(WorkspaceError):
    """A file tool was called where no workspace is configured for the call."""
