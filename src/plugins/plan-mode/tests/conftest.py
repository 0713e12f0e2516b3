"""Test-local doubles: a directory-backed ``hookagent.Workspace`` and the plugin that offers it.

The workspace plugin of issue 19 is built elsewhere; plan mode uses a workspace only through
the kernel's seam (``kernel.workspace(ctx)``), so any implementation of the protocol serves.
This one is real file I/O under a root directory (one subdirectory per user and session,
ids encoded injectively), with the protocol's path bounds, so it also works across processes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workspace_double import DirWorkspace, WorkspacePlugin

__all__ = ["DirWorkspace", "WorkspacePlugin"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace_root(tmp_path: Path) -> Path:
    root = tmp_path / "workspaces"
    root.mkdir()
    return root


@pytest.fixture
def workspace(workspace_root: Path) -> WorkspacePlugin:
    return WorkspacePlugin(workspace_root)
