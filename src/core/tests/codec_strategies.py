"""Hypothesis strategies for messages of every block type, shared by the codec's tests.

Each test file picks its own text, JSON values, ids and timestamps (test_codec.py the
state codec's, test_codec_format.py the stored formats' wider ones); the block and
message shapes are built here once, so both walk the same shapes.
"""

from __future__ import annotations

from typing import Any

from hookagent import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from hypothesis import strategies as st

SearchStrategy = st.SearchStrategy


def output_blocks(text: SearchStrategy[str]) -> SearchStrategy[Any]:
    """The blocks a tool result may hold."""
    return st.one_of(
        st.builds(TextBlock, text),
        st.builds(ImageBlock, text, st.none() | text),
        st.builds(DataBlock, text, st.none() | text, st.none() | text),
    )


def blocks(text: SearchStrategy[str], json_value: SearchStrategy[Any]) -> SearchStrategy[Any]:
    """Every block type, tool calls with JSON arguments and tool results with outputs."""
    output = output_blocks(text)
    return st.one_of(
        output,
        st.builds(ThinkingBlock, text),
        st.builds(
            ToolUseBlock,
            text,
            text,
            st.dictionaries(text, json_value, max_size=3),
            st.sampled_from(["requested", "streaming"]),
        ),
        st.builds(
            ToolResultBlock,
            text,
            text,
            st.lists(output, max_size=3).map(tuple),
            st.sampled_from(["success", "error", "interrupted", "denied"]),
        ),
    )


def messages(
    text: SearchStrategy[str],
    json_value: SearchStrategy[Any],
    ids: SearchStrategy[str],
    timestamps: SearchStrategy[float],
) -> SearchStrategy[Msg]:
    """A message of any role with up to four blocks, metadata and the given ids/times."""
    return st.builds(
        Msg,
        st.sampled_from(["user", "assistant", "system", "tool"]),
        st.lists(blocks(text, json_value), max_size=4).map(tuple),
        st.none() | text,
        ids,
        st.dictionaries(text, json_value, max_size=3),
        timestamps,
    )
