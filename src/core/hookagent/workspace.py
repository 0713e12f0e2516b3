"""The workspace seam: files a call's plugins share, whoever provides them.

Memory (AGENTS.md / MEMORY.md), plan mode (the plan file) and compaction (offloaded tool
results) all keep files next to a session, and none may depend on another plugin's code.
So the kernel names the interface and one hook, ``hookagent_workspace(ctx)``; a workspace
plugin (``hookagent-workspace``: any fsspec filesystem, scoped per user or session)
provides the object, and ``kernel.workspace(ctx)`` hands it to whoever asks.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Workspace(Protocol):
    """The files of one call's scope. Paths are relative POSIX paths inside it.

    Every method enforces the bounds: ``..``, absolute paths and links that leave the root
    raise ``WorkspacePathError``; a missing file ``WorkspaceFileNotFound``; a file or
    listing over the provider's limits ``WorkspaceLimitExceeded``.
    """

    url: str
    """Where the root is (``file:///srv/ws/u-alice``, ``s3://bucket/ws``), for messages."""

    shared: bool
    """True when other hosts see the same files (a remote filesystem)."""

    async def read_text(self, path: str) -> str: ...

    async def write_text(self, path: str, text: str) -> None: ...

    async def append_text(self, path: str, text: str) -> None: ...

    async def exists(self, path: str) -> bool: ...

    async def list(self, path: str = "") -> list[str]:
        """Entries directly under ``path`` (relative to the root), directories ending in ``/``."""
        ...

    async def remove(self, path: str) -> None: ...

    async def size(self, path: str) -> int: ...
