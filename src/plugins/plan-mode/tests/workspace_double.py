"""A directory-backed ``hookagent.Workspace`` for plan mode's tests (importable from a
subprocess too: the cross-process test puts this directory on ``PYTHONPATH``)."""

from __future__ import annotations

from pathlib import Path

from hookagent import (
    RuntimeContext,
    Workspace,
    WorkspaceFileNotFound,
    WorkspaceLimitExceeded,
    WorkspacePathError,
    hookimpl,
)
from hookagent.store.ids import encode_id


class DirWorkspace:
    """Files under ``root``; relative POSIX paths only, nothing outside ``root``."""

    shared = False

    def __init__(self, root: Path, max_bytes: int = 1_000_000) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.url = root.as_uri()

    def _path(self, path: str) -> Path:
        parts = path.split("/")
        if (
            not path
            or path.startswith("/")
            or "\\" in path
            or any(p in ("", ".", "..") for p in parts)
        ):
            raise WorkspacePathError(f"{path!r} is not a relative path inside the workspace")
        full = (self.root / path).resolve()
        if not full.is_relative_to(self.root.resolve()):
            raise WorkspacePathError(f"{path!r} escapes the workspace")
        return full

    async def read_text(self, path: str) -> str:
        full = self._path(path)
        if not full.is_file():
            raise WorkspaceFileNotFound(f"no file {path!r} in the workspace")
        return full.read_text(encoding="utf-8")

    async def write_text(self, path: str, text: str) -> None:
        if len(text.encode()) > self.max_bytes:
            raise WorkspaceLimitExceeded(f"{path!r}: over {self.max_bytes} bytes")
        full = self._path(path)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")

    async def append_text(self, path: str, text: str) -> None:
        old = await self.read_text(path) if await self.exists(path) else ""
        await self.write_text(path, old + text)

    async def exists(self, path: str) -> bool:
        return self._path(path).exists()

    async def list(self, path: str = "") -> list[str]:
        base = self.root if not path else self._path(path)
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(self.root).as_posix() + ("/" if p.is_dir() else "")
            for p in base.iterdir()
        )

    async def remove(self, path: str) -> None:
        full = self._path(path)
        if not full.is_file():
            raise WorkspaceFileNotFound(f"no file {path!r} in the workspace")
        full.unlink()

    async def size(self, path: str) -> int:
        full = self._path(path)
        if not full.is_file():
            raise WorkspaceFileNotFound(f"no file {path!r} in the workspace")
        return full.stat().st_size


class WorkspacePlugin:
    """Offers a per-session ``DirWorkspace`` through the kernel's ``hookagent_workspace``."""

    __name__ = "test-workspace"

    def __init__(self, root: Path) -> None:
        self.root = root

    def for_session(self, user_id: str, session_id: str) -> DirWorkspace:
        root = self.root / encode_id(user_id) / encode_id(session_id)
        root.mkdir(parents=True, exist_ok=True)
        return DirWorkspace(root)

    @hookimpl
    def hookagent_workspace(self, ctx: RuntimeContext) -> Workspace | None:
        return self.for_session(ctx.user_id, ctx.session_id or "default")
