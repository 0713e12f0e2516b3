"""The summary request's transcript and the summary message."""

from __future__ import annotations

from hookagent.messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from hookagent_compaction.cut import SUMMARY_KEY, is_summary
from hookagent_compaction.summary import (
    MESSAGES,
    PREVIOUS,
    SUMMARY_HEADER,
    instructions,
    render_transcript,
    summary_message,
)


def test_transcript_renders_every_block_and_chains_the_previous_summary():
    msgs = [
        Msg.user("find key 3", name="ann"),
        Msg.assistant(
            [ThinkingBlock("secret"), TextBlock("looking"), ToolUseBlock("c3", "lookup", {"k": 3})]
        ),
        Msg("tool", [ToolResultBlock("c3", "lookup", (TextBlock("x" * 30),), "error")]),
        Msg.assistant([ImageBlock("https://e/x.png"), DataBlock("ws://r/a.txt", name="a")]),
    ]
    text = render_transcript(msgs, "we met before", block_chars=10)
    assert text.splitlines() == [
        PREVIOUS,
        "we met before",
        "",
        MESSAGES,
        "### user (ann)",
        "find key 3",
        "### assistant",
        "looking",
        '[tool call lookup {"k":3} id=c3]',
        "### tool",
        "[tool result lookup error id=c3]",
        "xxxxxxxxxx",
        "[... 20 more characters not shown]",
        "### assistant",
        "[image https://e/x.png]",
        "[data a ws://r/a.txt]",
    ]
    assert "secret" not in text  # private reasoning is not carried over


def test_no_previous_summary_no_section():
    assert render_transcript([Msg.user("hi")], None, 100).splitlines() == [
        MESSAGES,
        "### user",
        "hi",
    ]


def test_instructions_carry_the_budget():
    assert "at most 4000 tokens" in instructions(4000, None)
    assert instructions(7, "Summarise in {budget} tokens.") == "Summarise in 7 tokens."


def test_the_summary_message_is_marked():
    msg = summary_message("  the gist  ", 12)
    assert msg.role == "user" and msg.text == f"{SUMMARY_HEADER}\nthe gist"
    assert is_summary(msg) and msg.metadata[SUMMARY_KEY]["summarised"] == 12
