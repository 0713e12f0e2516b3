"""The demo model's answer to a summary request: a deterministic digest, labelled as such.

It is not a summary a language model would write: it counts the messages, lists the tools
used and keeps the latest user requests, and folds a previous digest in. It reads the
transcript format of a compaction summary request (``## Previous summary``, ``## Messages
to summarise``, ``### <role>`` headers, ``[tool call <name> ...]`` lines) and falls back to
counting lines for any other text. Its size is bounded however often it is chained.
"""

from __future__ import annotations

import re
from collections import Counter

LABEL = (
    "[demo summary] A deterministic digest written by the rule-based demo model, not a "
    "language model's summary."
)
MAX_REQUESTS = 8
MAX_TOOLS = 10
_COUNT = re.compile(r"^Messages summarised so far: (\d+)\.$", re.M)
_TOOLS = re.compile(r"^Tools used: (.*)\.$", re.M)
_TOOL_ITEM = re.compile(r"^(\S+) x(\d+)$")
_HEADER = re.compile(r"^### (\w+)")
_TOOL_CALL = re.compile(r"^\[tool call (\S+) ")


def _short(text: str, limit: int = 72) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _previous(text: str) -> tuple[int, Counter[str], list[str]]:
    count = int(m.group(1)) if (m := _COUNT.search(text)) else 0
    tools: Counter[str] = Counter()
    if (t := _TOOLS.search(text)) and t.group(1) != "none":
        for item in t.group(1).split(", "):
            if (parsed := _TOOL_ITEM.match(item)) is not None:
                tools[parsed.group(1)] += int(parsed.group(2))
    requests = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    return count, tools, requests


def digest(text: str) -> str:
    """The digest of a summary request's text (previous digest folded in)."""
    previous, _, body = text.rpartition("## Messages to summarise")
    count, tools, requests = _previous(previous)
    role: str | None = None
    wants_text = False
    for line in body.splitlines():
        header = _HEADER.match(line)
        if header:
            role, wants_text = header.group(1), header.group(1) == "user"
            count += 1
            continue
        call = _TOOL_CALL.match(line)
        if call:
            tools[call.group(1)] += 1
        elif role == "user" and wants_text and line.strip():
            requests.append(_short(line))
            wants_text = False
    if role is None and body.strip():  # not a transcript: one message of text
        count += 1
        requests.append(_short(body))
    shown = sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TOOLS]
    tool_line = ", ".join(f"{name} x{n}" for name, n in shown) or "none"
    lines = [
        LABEL,
        f"Messages summarised so far: {count}.",
        f"Tools used: {tool_line}.",
        "Latest user requests:",
        *[f"- {r}" for r in requests[-MAX_REQUESTS:]],
    ]
    return "\n".join(lines)
