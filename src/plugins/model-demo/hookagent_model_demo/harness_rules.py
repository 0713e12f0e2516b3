"""The demo model's rules for the harness plugins' tools (todo list, files, plan mode, memory).

Plain sentences map to one tool call each, so the harness demo reads like a conversation and
still drives the real tools; two questions are answered from what the request carries (the
todo list the task plugin shows, the MEMORY.md the memory plugin puts in the system prompt),
which is how the demo shows that they reach the model. Deterministic, like ``rules.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hookagent.messages import Msg

PREFIX = "[demo model]"
_TODO = re.compile(r"^(?:make|write|keep)\s+a\s+todo\s+list:\s*(.+)$", re.I | re.S)
_TODO_ASK = re.compile(r"\bwhat(?:'s| is)\s+on\s+(?:my|the)\s+todo\s+list\b", re.I)
_WRITE = re.compile(
    r"""^write\s+(["'“])(?P<content>.+?)["'”]\s+(?:to|into)\s+(?P<path>[\w./-]+?)\.?$""",
    re.I | re.S,
)
_PLAN_ENTER = re.compile(r"\benter\s+plan\s+mode\b", re.I)
_PLAN_WRITE = re.compile(r"^plan:\s*(.+)$", re.I | re.S)
_PLAN_EXIT = re.compile(r"\b(?:exit|leave)\s+plan\s+mode\b", re.I)
_REMEMBER = re.compile(r"^remember(?::|\s+that)\s*(.+)$", re.I | re.S)
_RECALL = re.compile(r"\bwhat\s+do\s+you\s+remember\b", re.I)
_MEMORY_FILE = re.compile(r'<file path="MEMORY\.md">\n(.*?)\n</file>', re.S)
_TASK_STATE_ID = "hookagent-tasks-state"  # hookagent-tasks' synthetic TASK_STATE message


def is_view(msg: Msg) -> bool:
    """A message a plugin added to this request only (the TASK_STATE view), not a turn."""
    return msg.id == _TASK_STATE_ID


def harness_call(text: str) -> tuple[str, dict[str, object]] | None:
    """The harness tool a user sentence asks for, with its arguments (None: not one)."""
    text = text.strip()
    if (m := _TODO.match(text)) is not None:
        items = [i.strip(" .") for i in m.group(1).split(";") if i.strip(" .")]
        todos = [
            {"content": item, "status": "in_progress" if i == 0 else "pending"}
            for i, item in enumerate(items)
        ]
        return "todo_write", {"todos": todos}
    if (m := _WRITE.match(text)) is not None:
        return "write_file", {"path": m.group("path"), "content": m.group("content") + "\n"}
    if (m := _PLAN_WRITE.match(text)) is not None:
        return "plan_write", {"content": m.group(1).strip()}
    if _PLAN_ENTER.search(text):
        return "plan_enter", {}
    if _PLAN_EXIT.search(text):
        return "plan_exit", {}
    if (m := _REMEMBER.match(text)) is not None:
        return "memory_write", {"note": m.group(1).strip()}
    return None


def harness_answer(text: str, messages: Sequence[Msg], system: str | None) -> str | None:
    """An answer read from the request itself (None: the question is not one of these)."""
    if _TODO_ASK.search(text):
        lines = _todo_lines(messages)
        if lines is None:
            return f"{PREFIX} I see no todo list in this request."
        return f"{PREFIX} My request shows this todo list: " + " ".join(lines)
    if _RECALL.search(text):
        found = _MEMORY_FILE.search(system or "")
        if found is None:
            return f"{PREFIX} My system prompt holds no MEMORY.md."
        notes = [ln.strip() for ln in found.group(1).splitlines() if ln.strip()]
        notes = [ln for ln in notes if not ln.startswith("#")] or notes
        return f"{PREFIX} MEMORY.md is in my system prompt; it says: " + " | ".join(notes[-5:])
    return None


def _todo_lines(messages: Sequence[Msg]) -> list[str] | None:
    """The newest todo list the request shows: the TASK_STATE block or a todo_write result."""
    for msg in reversed(messages):
        if msg.id == _TASK_STATE_ID and "- [" in msg.text:
            return [ln.strip() for ln in msg.text.splitlines() if ln.strip().startswith("- [")]
        for result in msg.tool_results:
            if result.name == "todo_write" and result.state == "success":
                lines = [ln for ln in result.text.splitlines() if ln.startswith("- [")]
                if lines:
                    return lines
    return None
