"""``memory_write`` (append a dated note to MEMORY.md) and ``memory_search`` (read-only).

Both work on the call's workspace (``kernel.workspace(ctx)``); without one they fail with an
error result the model reads. Their arguments are checked before anything is written.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable

from hookagent import Agent, Workspace
from hookagent.context import RuntimeContext
from hookagent.errors import AgentError, WorkspaceFileNotFound

from .errors import MemoryToolError, NoWorkspace
from .options import MemorySettings

Clock = Callable[[], datetime.datetime]
Settings = Callable[[RuntimeContext], MemorySettings]
MAX_QUERY_CHARS = 500
MAX_LINE_CHARS = 500
NEW_FILE_HEADER = "# Memory\n"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _workspace(ctx: RuntimeContext) -> Workspace:
    agent = ctx.get(Agent)
    ws = agent.kernel.workspace(ctx) if agent is not None else None
    if ws is None:
        raise NoWorkspace(
            "no workspace is configured for this agent (install a workspace plugin such as "
            "hookagent-workspace): there is no MEMORY.md to use"
        )
    return ws


class MemoryTools:
    """The two tools, bound to the plugin's settings and clock."""

    def __init__(self, settings: Settings, clock: Clock = utc_now) -> None:
        self._settings = settings
        self._clock = clock

    def registrations(self) -> list[tuple[Callable[..., object], bool]]:
        return [(self.memory_write, False), (self.memory_search, True)]

    async def memory_write(self, ctx: RuntimeContext, note: str) -> str:
        """Save a note to long-term memory (MEMORY.md in the workspace), under today's date.

        Write facts worth keeping across conversations: preferences, decisions, where
        things are. Every later request shows MEMORY.md (within a budget); do not repeat
        notes that are already there.
        """
        settings = self._settings(ctx)
        text = note.strip()
        if not text:
            raise MemoryToolError("the note is empty; write the fact to remember")
        if len(text) > settings.max_note_chars:
            raise MemoryToolError(
                f"the note is {len(text)} characters, over {settings.max_note_chars}; "
                "keep one short fact per note"
            )
        if _CONTROL.search(text):
            raise MemoryToolError("the note contains control characters; write plain text")
        ws = _workspace(ctx)
        stamp = self._clock().astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        entry = f"\n## {stamp}\n{text}\n"
        path = settings.memory_file
        if not await ws.exists(path):
            entry = NEW_FILE_HEADER + entry
        await ws.append_text(path, entry)
        return f"noted in {path} under {stamp}"

    async def memory_search(self, ctx: RuntimeContext, query: str, max_results: int = 20) -> str:
        """Find lines in the workspace's AGENTS.md, MEMORY.md and KNOWLEDGE.md that contain
        every word of ``query`` (case-insensitive), with the date heading of each note."""
        settings = self._settings(ctx)
        terms = query.lower().split()
        if not terms or len(query) > MAX_QUERY_CHARS:
            raise MemoryToolError(f"the query must have 1 to {MAX_QUERY_CHARS} characters")
        if not 1 <= max_results <= settings.max_search_results:
            raise MemoryToolError(f"max_results must be in 1..{settings.max_search_results}")
        ws = _workspace(ctx)
        hits: list[str] = []
        problems: list[str] = []
        total = 0
        for path in settings.files:
            try:
                text = await ws.read_text(path)
            except WorkspaceFileNotFound:
                continue
            except AgentError as exc:
                problems.append(f"{path}: {type(exc).__name__}: {exc}")
                continue
            heading = ""
            for number, line in enumerate(text.splitlines(), 1):
                if line.startswith("#"):
                    heading = line.strip()
                low = line.lower()
                if not all(t in low for t in terms):
                    continue
                total += 1
                if len(hits) < max_results:
                    where = f" ({heading})" if heading and heading != line.strip() else ""
                    shown = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " ..."
                    hits.append(f"{path}:{number}{where}: {shown}")
        notes = [f"[could not read {p}]" for p in problems]
        if not hits:
            return "\n".join([f"no lines match {query!r} in {', '.join(settings.files)}", *notes])
        if total > len(hits):
            notes.append(f"[{total - len(hits)} more matching lines not shown]")
        return "\n".join([*hits, *notes])
