"""hookagent messages and tools -> the chat-completions request body."""

import json

import pytest
from hookagent.errors import InvalidMessage
from hookagent.messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from hookagent.models import ModelRequest, ToolSpec
from hookagent_model_openai.config import ModelConfigurationError
from hookagent_model_openai.convert import build_body, convert_message, convert_tools


def body(request: ModelRequest, **kw):
    kw.setdefault("model", "m")
    kw.setdefault("defaults", {})
    kw.setdefault("stream", False)
    kw.setdefault("stream_usage", True)
    return build_body(request, **kw)


def test_system_prompt_comes_first_and_user_text_is_a_string():
    out = body(ModelRequest([Msg.user("hi"), Msg.assistant("hello")], system="be brief"))
    assert out["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    assert out["model"] == "m"
    assert "tools" not in out and "stream" not in out


def test_tool_round_trip_links_ids_and_drops_thinking():
    use = ToolUseBlock("call_7", "get_weather", {"city": "Paris", "units": ["c"]})
    msgs = [
        Msg.user("weather?"),
        Msg.assistant([ThinkingBlock("let me look"), TextBlock("Checking."), use]),
        Msg("tool", [ToolResultBlock("call_7", "get_weather", (TextBlock("18C"),))]),
    ]
    wire = body(ModelRequest(msgs))["messages"]
    assert wire[1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(use.input)},
            }
        ],
    }
    assert json.loads(wire[1]["tool_calls"][0]["function"]["arguments"]) == use.input
    assert wire[2] == {"role": "tool", "tool_call_id": "call_7", "content": "18C"}
    assert "let me look" not in json.dumps(wire)


def test_assistant_with_only_tool_calls_has_null_content():
    wire = convert_message(Msg.assistant([ToolUseBlock("a", "t", {})]))
    assert wire[0]["content"] is None and wire[0]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_several_results_become_several_tool_messages_in_order():
    results = [
        ToolResultBlock("a", "t", (TextBlock("one"),)),
        ToolResultBlock("b", "t", (), state="error"),
        ToolResultBlock("c", "t", (TextBlock("no"),), state="denied"),
        ToolResultBlock(
            "d",
            "t",
            (ImageBlock("https://x/p.png"), DataBlock("s3://b/f.csv", "text/csv", "f.csv")),
        ),
    ]
    wire = convert_message(Msg("tool", results))
    assert [(m["role"], m["tool_call_id"]) for m in wire] == [
        ("tool", "a"),
        ("tool", "b"),
        ("tool", "c"),
        ("tool", "d"),
    ]
    assert wire[0]["content"] == "one"
    assert wire[1]["content"] == "[error] (no output)"
    assert wire[2]["content"] == "[denied] no"
    assert wire[3]["content"] == "[image: https://x/p.png][f.csv (text/csv): s3://b/f.csv]"


def test_images_become_image_url_parts_and_data_a_text_mention():
    msg = Msg.user(
        [
            TextBlock("what is this?"),
            ImageBlock("data:image/png;base64,AAAA", "image/png"),
            DataBlock("file:///tmp/report.pdf", "application/pdf"),
        ]
    )
    assert convert_message(msg) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "[data (application/pdf): file:///tmp/report.pdf]"},
            ],
        }
    ]


def test_data_only_user_message_stays_a_string():
    wire = convert_message(Msg.user([TextBlock("see "), DataBlock("s3://b/k", name="k")]))
    assert wire == [{"role": "user", "content": "see [k: s3://b/k]"}]


def test_system_message_and_tool_text_without_id():
    assert convert_message(Msg.system("rules")) == [{"role": "system", "content": "rules"}]
    wire = convert_message(
        Msg("tool", [TextBlock("note"), ToolResultBlock("x", "t", (TextBlock("r"),))])
    )
    assert wire == [
        {"role": "user", "content": "note"},
        {"role": "tool", "tool_call_id": "x", "content": "r"},
    ]


def test_tool_use_outside_assistant_is_refused():
    with pytest.raises(InvalidMessage, match="tool_use"):
        convert_message(Msg.user([ToolUseBlock("a", "t", {})]))
    with pytest.raises(InvalidMessage):
        convert_message("not a message")  # type: ignore[arg-type]


def test_tools_schema():
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert convert_tools(
        [ToolSpec("get_weather", "Weather now.", params), ToolSpec("noop", "", {})]
    ) == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": params,
                "description": "Weather now.",
            },
        },
        {"type": "function", "function": {"name": "noop", "parameters": {}}},
    ]
    with pytest.raises(InvalidMessage):
        convert_tools([{"name": "x"}])  # type: ignore[list-item]


def test_options_override_defaults_and_stream_flags():
    req = ModelRequest([Msg.user("x")], options={"temperature": 0.1, "model": "other"})
    out = body(req, defaults={"temperature": 0.9, "max_tokens": 5}, stream=True)
    assert out["temperature"] == 0.1 and out["max_tokens"] == 5 and out["model"] == "other"
    assert out["stream"] is True and out["stream_options"] == {"include_usage": True}
    out = body(req, stream=True, stream_usage=False)
    assert "stream_options" not in out


@pytest.mark.parametrize(
    "options",
    [
        {"messages": []},
        {"stream": False},
        {"tools": []},
        {"temperature": float("nan")},
        {"x": object()},
    ],
)
def test_bad_request_options_are_typed_errors(options):
    with pytest.raises(ModelConfigurationError):
        body(ModelRequest([Msg.user("x")], options=options))
