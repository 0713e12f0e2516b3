"""The file tools the model uses: ``read_file``, ``list_files``, ``glob``, ``grep`` (read-only)
and ``write_file``, ``edit_file``.

Every result is bounded (``Limits.max_output_chars``, ``max_results``) and says when and why
it was cut, because a tool result is stored in the durable history. Errors are raised as the
workspace's typed errors: the kernel turns them into an ``error`` result the model reads
(``tool 'read_file' failed: WorkspaceFileNotFound: read 'x': no such file ...``).
"""

from __future__ import annotations

from collections.abc import Callable

from hookagent.context import RuntimeContext

from .backend import LinkRefused, NotRegular, ParentNotDir, TooLarge
from .errors import EditError, NoWorkspace, ToolInputError
from .globs import Glob
from .grep import GrepResult, compile_pattern, search_lines
from .paths import join, split_path
from .workspace import FsWorkspace

Resolve = Callable[[RuntimeContext], "FsWorkspace | None"]
MAX_LINE_CHARS = 2000
"""Longest line ``read_file`` and ``grep`` show (longer ones are cut and marked)."""
MAX_READ_LINES = 5000


def _line(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return text[:MAX_LINE_CHARS] + f" [... {len(text) - MAX_LINE_CHARS} more characters]"


class _Out:
    """Lines up to a character budget; what did not fit is counted, not silently lost."""

    def __init__(self, budget: int) -> None:
        self.lines: list[str] = []
        self.budget = budget
        self.full = False

    def add(self, line: str) -> bool:
        if self.full or len(line) + 1 > self.budget:
            self.full = True
            return False
        self.lines.append(line)
        self.budget -= len(line) + 1
        return True

    def text(self, *notes: str) -> str:
        return "\n".join([*self.lines, *(f"[{n}]" for n in notes if n)])


class FileTools:
    """The six tools, bound to a resolver giving each call's workspace."""

    def __init__(self, resolve: Resolve) -> None:
        self._resolve = resolve

    def _ws(self, ctx: RuntimeContext) -> FsWorkspace:
        ws = self._resolve(ctx)
        if ws is None:
            raise NoWorkspace("no workspace is configured for this call")
        return ws

    def registrations(self) -> list[tuple[Callable[..., object], bool]]:
        """(tool, read_only) pairs, in the order they are registered."""
        return [
            (self.read_file, True),
            (self.list_files, True),
            (self.glob, True),
            (self.grep, True),
            (self.write_file, False),
            (self.edit_file, False),
        ]

    async def read_file(
        self, ctx: RuntimeContext, path: str, offset: int = 1, limit: int = 2000
    ) -> str:
        """Read a UTF-8 text file of the workspace, as numbered lines (number, tab, line).

        ``offset`` is the first line to show (1-based), ``limit`` how many lines; a long
        file is shown in parts, with a note saying how to read on. Paths are relative to
        the workspace root.
        """
        ws = self._ws(ctx)
        if offset < 1 or not 1 <= limit <= MAX_READ_LINES:
            raise ToolInputError(f"offset must be >= 1 and limit in 1..{MAX_READ_LINES}")
        lines = (await ws.read_text(path)).splitlines()
        shown = join(split_path(path))
        if not lines:
            return f"({shown} is empty)"
        if offset > len(lines):
            raise ToolInputError(f"{shown} has {len(lines)} lines; offset {offset} is past the end")
        out = _Out(ws.limits.max_output_chars)
        last = offset - 1
        for number in range(offset, min(len(lines), offset + limit - 1) + 1):
            if not out.add(f"{number}\t{_line(lines[number - 1])}"):
                break
            last = number
        if last == len(lines) and offset == 1:
            return out.text()
        note = f"lines {offset}-{last} of {len(lines)} shown"
        if last < len(lines):
            note += f"; call read_file with offset={last + 1} to read on"
        return out.text(note)

    async def list_files(self, ctx: RuntimeContext, path: str = "") -> str:
        """List a directory of the workspace (default: the root): one entry per line,
        directories ending with /, files with their size in bytes."""
        ws = self._ws(ctx)
        entries = await ws.entries(path)
        parts = split_path(path, allow_root=True)
        prefix = join(parts) + "/" if parts else ""
        if not entries:
            return f"({prefix or 'the workspace root'} is empty)"
        out = _Out(ws.limits.max_output_chars)
        shown = 0
        for e in entries[: ws.limits.max_results]:
            if e.kind == "dir":
                line = f"{prefix}{e.name}/"
            elif e.kind == "file":
                line = f"{prefix}{e.name}  ({e.size} bytes)"
            else:
                what = "symbolic link, not followed" if e.kind == "link" else "not a regular file"
                line = f"{prefix}{e.name}  ({what})"
            if not out.add(line):
                break
            shown += 1
        more = len(entries) - shown
        return out.text(f"{more} more entries not shown" if more else "")

    async def glob(self, ctx: RuntimeContext, pattern: str, path: str = "") -> str:
        """Find files whose path matches a glob pattern, relative to ``path`` (default: the
        root): ``*`` within a name, ``**`` across directories, ``?``, ``[a-z]``,
        ``{a,b}``. Example: ``**/*.py``. Returns matching file paths, one per line."""
        ws = self._ws(ctx)
        matcher = Glob(pattern)
        parts = split_path(path, allow_root=True)
        files, more = await ws.walk(path)
        cut = len(parts)
        hits = [p for p, _ in files if matcher.match("/".join(p.split("/")[cut:]))]
        if not hits:
            note = f"; only the first {len(files)} files were looked at" if more else ""
            return f"no files match {pattern!r}{note}"
        out = _Out(ws.limits.max_output_chars)
        shown = 0
        for p in hits[: ws.limits.max_results]:
            if not out.add(p):
                break
            shown += 1
        notes = [f"{len(hits) - shown} more matches not shown" if shown < len(hits) else ""]
        if more:
            notes.append(f"the search stopped after {len(files)} files")
        return out.text(*notes)

    async def grep(
        self,
        ctx: RuntimeContext,
        pattern: str,
        path: str = "",
        include: str | None = None,
        ignore_case: bool = False,
        fixed_strings: bool = False,
    ) -> str:
        """Search the text files below ``path`` (default: the root) for a regular expression
        (Python syntax; ``fixed_strings`` for plain text), optionally only in files whose
        path matches the glob ``include`` (like ``**/*.py``). Returns ``path:line: text``."""
        ws = self._ws(ctx)
        regex = compile_pattern(pattern, ignore_case=ignore_case, fixed_strings=fixed_strings)
        matcher = Glob(include) if include is not None else None
        files, more = await ws.walk(path)
        if matcher is not None:
            parts = split_path(path, allow_root=True)
            cut = len(parts)
            files = [(p, s) for p, s in files if matcher.match("/".join(p.split("/")[cut:]))]
        limits = ws.limits

        def read(rel: str) -> bytes | None:
            try:
                return ws.backend.read(ws.names + split_path(rel), limits.max_file_bytes)
            except (TooLarge, NotRegular, LinkRefused, ParentNotDir, OSError):
                return None

        found: GrepResult = await ws.run(
            "grep",
            join(split_path(path, allow_root=True)),
            lambda: search_lines(
                regex,
                files,
                read,
                max_matches=limits.max_results,
                max_bytes=limits.max_scan_bytes,
                max_seconds=limits.max_search_seconds,
            ),
        )
        if more:
            found.cut.append(f"{len(files)} files looked at")
        summary = (
            f"{len(found.matches)} matches in {found.files_matched} files "
            f"({found.files_scanned} files searched"
            + (f"; skipped: {', '.join(found.skipped)}" if found.skipped else "")
            + ")"
        )
        if found.cut:
            summary += f"; stopped early at {', '.join(found.cut)}"
        if not found.matches:
            return f"no matches for {pattern!r} [{summary}]"
        out = _Out(limits.max_output_chars - len(summary) - 32)
        shown = 0
        for p, number, line in found.matches:
            if not out.add(f"{p}:{number}: {_line(line)}"):
                break
            shown += 1
        more_note = f"{len(found.matches) - shown} more matches not shown" if out.full else ""
        return out.text(summary, more_note)

    async def write_file(self, ctx: RuntimeContext, path: str, content: str) -> str:
        """Create or replace a text file of the workspace with ``content`` (UTF-8); missing
        parent directories are made. Prefer edit_file to change part of a file."""
        ws = self._ws(ctx)
        existed = await ws.exists(path)
        await ws.write_text(path, content)
        size = len(content.encode("utf-8"))
        return f"{'replaced' if existed else 'created'} {join(split_path(path))} ({size} bytes)"

    async def edit_file(
        self,
        ctx: RuntimeContext,
        path: str,
        old_text: str,
        new_text: str,
        replace_all: bool = False,
    ) -> str:
        """Replace exact text in a workspace file: ``old_text`` must appear exactly once
        (copy it from read_file without the line numbers, with enough context to be unique),
        or set ``replace_all`` to replace every occurrence."""
        ws = self._ws(ctx)
        shown = join(split_path(path))
        if not old_text:
            raise EditError("old_text must not be empty (use write_file to create a file)")
        if old_text == new_text:
            raise EditError("old_text and new_text are the same: nothing would change")
        text = await ws.read_text(path)
        count = text.count(old_text)
        if count == 0:
            raise EditError(
                f"old_text was not found in {shown}; read the file and copy the exact text, "
                "including whitespace and indentation"
            )
        if count > 1 and not replace_all:
            raise EditError(
                f"old_text appears {count} times in {shown}; add surrounding lines to make it "
                "unique, or set replace_all to replace all of them"
            )
        await ws.write_text(path, text.replace(old_text, new_text))
        return f"replaced {count} occurrence{'s' if count > 1 else ''} in {shown}"
