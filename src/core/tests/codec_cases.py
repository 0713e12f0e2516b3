"""Messages of every kind, with fixed ids and timestamps: the codec's format fixtures.

``fixtures/codec_v1_messages.jsonl`` holds these messages as ``encode_msg`` wrote them before
the compact form (format 1, one JSON object per message; captured from main at 7bcd7b4 by
``python src/core/tests/codec_cases.py``). Stores hold data in that format, so it must keep
decoding to the same messages.
"""

from __future__ import annotations

from pathlib import Path

from hookagent import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
V1_MESSAGES = FIXTURES / "codec_v1_messages.jsonl"

_HEX = "0123456789abcdef0123456789abcdef"


def cases() -> list[Msg]:
    """One message per shape the codec distinguishes (defaults, non-defaults, odd values)."""
    ts = 1796151336.8211594
    return [
        Msg.user("hello", id=_HEX, timestamp=ts),
        Msg.user("", id="a1b2c3d4e5f60718293a4b5c6d7e8f90", timestamp=0.0),
        Msg.system("be brief", id="not-hex id", timestamp=1.5),
        Msg.assistant(
            [ToolUseBlock("call_1", "lookup", {"key": 1})],
            id="ffffffffffffffffffffffffffffffff",
            timestamp=ts,
        ),
        Msg.assistant(
            [
                ThinkingBlock("hmm"),
                TextBlock("two "),
                TextBlock('texts \u00e9\u4e2d\U0001f600 "q" \\ \n\t'),
                ToolUseBlock("c2", "f", {"nested": {"a": [1, 2.5, None, True, "x"]}}, "streaming"),
                ToolUseBlock("c3", "g", {}, "streaming"),
                ToolUseBlock("c4", "h"),
            ],
            name="bot",
            id=_HEX.upper(),
            metadata={"generate_reason": "COMPLETED", "usage": {"in": 3, "out": 4}},
            timestamp=-2.0,
        ),
        Msg(
            "tool",
            [ToolResultBlock("call_1", "lookup", (TextBlock("r1| value"),))],
            id="0" * 32,
            timestamp=1e9,
        ),
        Msg(
            "tool",
            [
                ToolResultBlock("c2", "f", (), "error"),
                ToolResultBlock(
                    "c3",
                    "g",
                    (
                        TextBlock("a"),
                        ImageBlock("s3://b/i.png", "image/png"),
                        ImageBlock("https://x/y"),
                        DataBlock("file:///d.csv", "text/csv", "d.csv"),
                        DataBlock("u"),
                        DataBlock("u2", None, "only-name"),
                    ),
                    "interrupted",
                ),
                ToolResultBlock("c4", "h", (TextBlock("no"),), "denied"),
                ToolResultBlock("c5", "k", (ImageBlock("i"),)),
            ],
            name="tools",
            id="x",
            metadata={"k": "v"},
            timestamp=12345,
        ),
        Msg.assistant([], id="", timestamp=3.25),
        Msg.user([TextBlock("a"), TextBlock("b")], id=_HEX, metadata={"a": []}, timestamp=7.0),
        Msg.assistant("final", id=_HEX, metadata={"generate_reason": "COMPLETED"}, timestamp=ts),
        Msg.user([ImageBlock("https://img"), DataBlock("d", "m")], id=_HEX, timestamp=ts),
    ]


if __name__ == "__main__":  # capture the current format (run on the commit that writes it)
    from hookagent.codec import encode_msg

    FIXTURES.mkdir(exist_ok=True)
    V1_MESSAGES.write_bytes(b"".join(encode_msg(m) + b"\n" for m in cases()))
