"""hookagent-workspace: a bounded, isolated file workspace on any fsspec filesystem.

``WorkspacePlugin`` (or the entry point ``workspace`` with ``plugin_options["workspace"]``)
serves the kernel's workspace seam and the file tools; outside a call, application code
asks ``config.kernel.workspace(RuntimeContext(user_id=..., session_id=...))``.
"""

from __future__ import annotations

from .errors import (
    EditError,
    NotADirectory,
    NotAFile,
    NotText,
    NoWorkspace,
    PatternError,
    ToolInputError,
    WorkspaceError,
    WorkspaceFileNotFound,
    WorkspaceLimitExceeded,
    WorkspaceOptionsError,
    WorkspacePathError,
    WorkspaceUnavailable,
)
from .options import WorkspaceSettings, open_backend, parse_options
from .plugin import WorkspacePlugin
from .scope import SCOPES, Scope, scope_names
from .workspace import FsWorkspace, Limits

__all__ = [
    "SCOPES",
    "EditError",
    "FsWorkspace",
    "Limits",
    "NoWorkspace",
    "NotADirectory",
    "NotAFile",
    "NotText",
    "PatternError",
    "Scope",
    "ToolInputError",
    "WorkspaceError",
    "WorkspaceFileNotFound",
    "WorkspaceLimitExceeded",
    "WorkspaceOptionsError",
    "WorkspacePathError",
    "WorkspacePlugin",
    "WorkspaceSettings",
    "WorkspaceUnavailable",
    "open_backend",
    "parse_options",
    "scope_names",
]
