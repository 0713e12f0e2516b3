"""Reading the files and caching the rendered section, so a request whose files did not
change costs a version check per file, not a read, a count and a cut.

A workspace that offers ``async version(path) -> Hashable | None`` (``hookagent-workspace``
does: inode, size and times on local disk, an ETag or modification time elsewhere; None for
a missing file; a fresh value for a file changed in the last seconds), or its batch form
``async versions(paths) -> list``, is asked that; the section is rendered again only when a
version moved. A workspace without it (any other
``hookagent.Workspace``) is read on every request and the section re-rendered only when a
text changed. Either way an edit is seen by the very next request.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import attrs
from hookagent import Workspace
from hookagent.errors import AgentError, WorkspaceFileNotFound

from .budget import Counter, FileText, render
from .options import MemorySettings

CACHE_SIZE = 128
"""Workspaces (scope directories) whose rendered section is kept."""


@attrs.frozen
class _Entry:
    settings: MemorySettings
    counter: Counter
    marks: tuple[Hashable, ...]
    section: str


async def _read(ws: Workspace, path: str) -> FileText:
    try:
        return FileText(path, await ws.read_text(path))
    except WorkspaceFileNotFound:
        return FileText(path)
    except AgentError as exc:  # a file too large, not text, a filesystem error: said, not fatal
        return FileText(path, error=f"{type(exc).__name__}: {exc}")


def _digest(f: FileText) -> bytes:
    """What a read found, in 16 bytes (the cache keeps no copy of a large file)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (f.text, f.error):
        data = b"" if part is None else part.encode("utf-8", "surrogatepass")
        h.update(b"-" if part is None else len(data).to_bytes(8, "big"))
        h.update(data)
    return h.digest()


async def _version(ws: Any, path: str) -> Hashable:
    try:
        mark: Hashable = await ws.version(path)
    except WorkspaceFileNotFound:
        return None
    except AgentError:
        return object()  # unknown: read it
    return mark


async def _versions(ws: Any, paths: tuple[str, ...]) -> tuple[Hashable, ...]:
    try:
        marks = await ws.versions(list(paths))
    except AgentError:
        return tuple(object() for _ in paths)  # unknown: read them
    return tuple(marks)


class SectionCache:
    """The rendered section per workspace URL, least recently used first out."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()  # one plugin may serve event loops in several threads
        self.renders = 0
        """How many sections were rendered (tests and benches read it)."""

    def _get(self, url: str, settings: MemorySettings, counter: Counter) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(url)
            if entry is None or entry.settings is not settings or entry.counter is not counter:
                return None
            self._entries.move_to_end(url)
            return entry

    def _put(self, url: str, entry: _Entry) -> None:
        with self._lock:
            self._entries[url] = entry
            self._entries.move_to_end(url)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    async def section(self, ws: Workspace, settings: MemorySettings, counter: Counter) -> str:
        """The section for ``ws``'s files now ("" when none has text)."""
        cached = self._get(ws.url, settings, counter)
        if callable(getattr(ws, "versions", None)):
            marks = await _versions(ws, settings.files)
            if cached is not None and cached.marks == marks:
                return cached.section
            files = [
                await _read(ws, p) if m is not None else FileText(p)
                for p, m in zip(settings.files, marks, strict=True)
            ]
        elif callable(getattr(ws, "version", None)):
            marks = tuple([await _version(ws, p) for p in settings.files])
            if cached is not None and cached.marks == marks:
                return cached.section
            files = [
                await _read(ws, p) if m is not None else FileText(p)
                for p, m in zip(settings.files, marks, strict=True)
            ]
        else:
            files = [await _read(ws, p) for p in settings.files]
            marks = tuple(_digest(f) for f in files)
            if cached is not None and cached.marks == marks:
                return cached.section
        section = render(files, settings.budget_tokens, counter, settings.keep_tail)
        self.renders += 1
        self._put(ws.url, _Entry(settings, counter, marks, section))
        return section
