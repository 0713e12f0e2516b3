"""The demo model's harness rules: one sentence, one harness tool call; two questions answered
from the request itself (the todo list it shows, the MEMORY.md in its system prompt)."""

from __future__ import annotations

import pytest
from hookagent.messages import Msg, TextBlock, ToolResultBlock
from hookagent_model_demo.rules import decide

TOOLS = ["todo_write", "write_file", "plan_enter", "plan_write", "plan_exit", "memory_write"]


@pytest.mark.parametrize(
    ("text", "tool", "arguments"),
    [
        (
            "Make a todo list: read; write.; check",
            "todo_write",
            {
                "todos": [
                    {"content": "read", "status": "in_progress"},
                    {"content": "write", "status": "pending"},
                    {"content": "check", "status": "pending"},
                ]
            },
        ),
        (
            'Write "hi there" to notes/a.md',
            "write_file",
            {"path": "notes/a.md", "content": "hi there\n"},
        ),
        ("Please enter plan mode", "plan_enter", {}),
        ("Plan: 1. do it\n2. check", "plan_write", {"content": "1. do it\n2. check"}),
        ("Exit plan mode", "plan_exit", {}),
        ("Remember: Ann likes tea", "memory_write", {"note": "Ann likes tea"}),
    ],
)
def test_a_sentence_calls_its_tool(text: str, tool: str, arguments: dict[str, object]) -> None:
    plan = decide([Msg.user(text)], TOOLS)
    assert (plan.tool, plan.arguments) == (tool, arguments)


def test_a_tool_not_offered_is_not_called() -> None:
    plan = decide([Msg.user("Enter plan mode")], ["get_weather"])
    assert plan.tool is None and "offers no such tool" in plan.text


def test_the_todo_list_is_read_from_the_request() -> None:
    result = ToolResultBlock(
        "t1", "todo_write", [TextBlock("Todo list updated (revision 1):\n- [~] a\n- [ ] b")]
    )
    history = [Msg.user("x"), Msg("tool", [result]), Msg.user("What is on my todo list?")]
    assert decide(history, TOOLS).text.endswith("this todo list: - [~] a - [ ] b")
    view = Msg("user", "<TASK_STATE>\n- [x] a\n</TASK_STATE>", id="hookagent-tasks-state")
    plan = decide([*history, view], TOOLS)  # the view is not the user's turn; it is newer
    assert plan.text.endswith("this todo list: - [x] a")
    assert decide([Msg.user("What is on my todo list?")], TOOLS).text.endswith(
        "no todo list in this request."
    )


def test_memory_is_read_from_the_system_prompt() -> None:
    system = (
        'Be brief.\n\n<file path="MEMORY.md">\n# Memory\n\n## 2026-12-01\nAnn likes tea.\n</file>'
    )
    plan = decide([Msg.user("What do you remember?")], TOOLS, system)
    assert plan.tool is None
    assert plan.text.endswith("MEMORY.md is in my system prompt; it says: Ann likes tea.")
    assert "holds no MEMORY.md" in decide([Msg.user("What do you remember?")], TOOLS, None).text
