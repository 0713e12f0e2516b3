"""The prompt section: the files' texts, cut to a token budget, with a notice per cut.

A pure function of (texts, budget, counter): the middleware caches its result. The budget
covers the whole section, frame and notices included. Files share it fairly (water
filling: a small file gets all it needs, the large ones split the rest), and each cut file
keeps its head, or its tail for files whose newest lines are last (``MEMORY.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

Counter = Callable[[str], int]

HEADER = (
    "<workspace_files>\n"
    "Reference data from the workspace (AGENTS.md: how to work here; MEMORY.md: notes kept "
    "with memory_write; KNOWLEDGE.md: background). It is not part of the conversation."
)
FOOTER = "</workspace_files>"
_CLOSING = re.compile(r"</(file|workspace_files)\b")
_WORST = 999_999_999
"""The widest number a notice can hold: reserving room for it never underestimates."""


@attrs.frozen
class FileText:
    """One file as read: its text, or why it could not be read (None and None: missing)."""

    path: str
    text: str | None = None
    error: str | None = None


def escape(text: str) -> str:
    """Content cannot close the frame: ``</file`` becomes ``<\\/file``."""
    return _CLOSING.sub(r"<\\/\1", text)


def _notice(path: str, total: int, chars: int, kept: int, budget: int, tail: bool) -> str:
    if kept == 0:
        return (
            f"[memory: {path} ({total} tokens, {chars} characters) was left out: it does not "
            f"fit the {budget}-token budget. Use memory_search or read_file to see it.]"
        )
    shown = "last" if tail else "first"
    lost = "first" if tail else "last"
    return (
        f"[memory: {path} was cut to fit the {budget}-token budget: it has {total} tokens "
        f"({chars} characters); the {shown} {kept} characters are shown and the {lost} "
        f"{chars - kept} were left out. Use memory_search or read_file to see the rest.]"
    )


def _error_notice(path: str, error: str) -> str:
    return f"[memory: {path} could not be read: {error}]"


def _block(path: str, body: str) -> str:
    end = "" if body.endswith("\n") else "\n"
    return f'<file path="{path}">\n{body}{end}</file>'


def share(sizes: Sequence[int], budget: int) -> list[int]:
    """Tokens for each file: all it needs if the small ones leave enough, else an equal
    share of what is left (never more than it needs, never below 0)."""
    out = [0] * len(sizes)
    left = max(budget, 0)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for rank, i in enumerate(order):
        fair = left // (len(order) - rank)
        out[i] = min(sizes[i], fair)
        left -= out[i]
    return out


def cut(text: str, tokens: int, count: Counter, *, tail: bool) -> str:
    """The longest head (or tail) of ``text`` within ``tokens``, ended at a line break when
    one is near (within the last fifth), so the model does not see half a line."""
    if tokens <= 0:
        return ""
    if count(text) <= tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the most characters whose count fits
        mid = (lo + hi + 1) // 2
        piece = text[len(text) - mid :] if tail else text[:mid]
        if count(piece) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    if tail:
        piece = text[len(text) - lo :]
        nl = piece.find("\n")
        return piece[nl + 1 :] if 0 <= nl < lo // 5 else piece
    piece = text[:lo]
    nl = piece.rfind("\n")
    return piece[: nl + 1] if nl >= lo - lo // 5 else piece


def render(
    files: Sequence[FileText], budget: int, count: Counter, keep_tail: frozenset[str]
) -> str:
    """The section for the system prompt ("" when no file has text or an error)."""
    present = [f for f in files if f.text or f.error]
    if not present:
        return ""
    texts = [escape(f.text) if f.text else "" for f in present]
    sizes = [count(t) if t else 0 for t in texts]
    # the frame, and a notice of the widest form for every file that has text
    frame = [HEADER]
    for f, t in zip(present, texts, strict=True):
        if f.error:
            frame.append(_error_notice(f.path, f.error))
        if t:
            frame.append(_block(f.path, ""))
            frame.append(_notice(f.path, _WORST, _WORST, _WORST, budget, True))
    frame.append(FOOTER)
    room = budget - count("\n\n".join(frame))
    if sum(sizes) <= room:
        return _assemble(present, texts, texts, sizes, budget, keep_tail)
    for _ in range(4):  # a tokenizer need not be additive: shrink until the whole fits
        kept = [
            cut(t, n, count, tail=f.path in keep_tail) if t else ""
            for f, t, n in zip(present, texts, share(sizes, room), strict=True)
        ]
        section = _assemble(present, texts, kept, sizes, budget, keep_tail)
        over = count(section) - budget
        if over <= 0:
            return section
        room -= over
    return _assemble(present, texts, [""] * len(texts), sizes, budget, keep_tail)


def _assemble(
    present: Sequence[FileText],
    texts: Sequence[str],
    kept: Sequence[str],
    sizes: Sequence[int],
    budget: int,
    keep_tail: frozenset[str],
) -> str:
    parts = [HEADER]
    for f, full, shown, total in zip(present, texts, kept, sizes, strict=True):
        if f.error:
            parts.append(_error_notice(f.path, f.error))
        if not full:
            continue
        if shown:
            parts.append(_block(f.path, shown))
        if len(shown) < len(full):
            tail = f.path in keep_tail
            parts.append(_notice(f.path, total, len(full), len(shown), budget, tail))
    parts.append(FOOTER)
    return "\n\n".join(parts)
