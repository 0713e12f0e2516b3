"""Answers (whole and streamed) -> ModelResponse, with every malformed shape refused."""

import pytest
from hookagent.errors import MalformedModelResponse, ModelUnavailable
from hookagent.messages import TextBlock, ThinkingBlock, ToolUseBlock
from hookagent.models import ModelDelta
from hookagent_model_openai.parse import parse_completion, parse_usage, stop_reason
from hookagent_model_openai.streaming import StreamAccumulator
from hookagent_model_openai.testing import chunk, completion, tool_call


def test_plain_completion():
    r = parse_completion(
        completion("hello", usage_={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
    )
    assert r.message.role == "assistant" and r.message.content == (TextBlock("hello"),)
    assert r.usage == {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    assert r.stop_reason == "end_turn"
    assert r.message.metadata == {"model": "fake-model"}


def test_tool_calls_completion():
    data = completion(
        "Let me check.",
        tool_calls=[tool_call("get", {"city": "Paris"}, "call_1"), tool_call("noop", "", "call_2")],
    )
    r = parse_completion(data)
    assert r.message.content == (
        TextBlock("Let me check."),
        ToolUseBlock("call_1", "get", {"city": "Paris"}),
        ToolUseBlock("call_2", "noop", {}),
    )
    assert r.stop_reason == "tool_use"


def test_reasoning_content_becomes_thinking_first():
    r = parse_completion(completion("4", extra_message={"reasoning_content": "2+2"}))
    assert r.message.content == (ThinkingBlock("2+2"), TextBlock("4"))


def test_missing_id_is_made_up_and_dict_arguments_accepted():
    call = {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    r = parse_completion(completion(None, tool_calls=[call]))
    (use,) = r.message.tool_uses
    assert use.id.startswith("call_") and use.input == {"a": 1}


def test_list_content_parts_are_joined():
    r = parse_completion(completion([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]))
    assert r.message.text == "ab"


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "not a JSON object"),
        ({"id": "x"}, "no choices"),
        ({"choices": []}, "no choices"),
        ({"choices": ["x"]}, "choice is a str"),
        ({"choices": [{"index": 0}]}, "no message"),
        (completion(None, tool_calls=[tool_call("f", "{not json")]), "not valid JSON"),
        (completion(None, tool_calls=[tool_call("f", "[1, 2]")]), "must be a JSON object"),
        (completion(None, tool_calls=[tool_call("f", "3")]), "must be a JSON object"),
        (
            completion(None, tool_calls=[{"id": "a", "function": {"arguments": "{}"}}]),
            "function name",
        ),
        (completion(None, tool_calls=[{"id": "a"}]), "has no function"),
        (
            completion(
                None,
                tool_calls=[tool_call("f", "{}") | {"function": {"name": "f", "arguments": 5}}],
            ),
            "not a JSON string",
        ),
        (completion({"x": 1}), "content is a dict"),
        ({"choices": [{"message": {"tool_calls": "x"}}]}, "tool_calls is not a list"),
    ],
)
def test_malformed_completions(data, match):
    with pytest.raises(MalformedModelResponse, match=match):
        parse_completion(data)


def test_usage_and_stop_reasons():
    assert parse_usage(
        {
            "prompt_tokens": 10,
            "completion_tokens": 4,
            "total_tokens": 14,
            "prompt_tokens_details": {"cached_tokens": 6},
            "completion_tokens_details": {"reasoning_tokens": 2},
            "junk": "x",
        }
    ) == {
        "input_tokens": 10,
        "output_tokens": 4,
        "total_tokens": 14,
        "cached_input_tokens": 6,
        "reasoning_tokens": 2,
    }
    assert (
        parse_usage(None) == {}
        and parse_usage({"prompt_tokens": "3", "completion_tokens": True}) == {}
    )
    assert stop_reason("length", False) == "max_tokens"
    assert stop_reason("stop", True) == "tool_use"
    assert stop_reason("eos", False) == "eos" and stop_reason(None, False) is None


# ------------------------------------------------------------------------------- streaming


def feed(acc, chunks):
    return [d for d in (acc.add(c) for c in chunks) if d is not None]


def test_stream_text_thinking_and_usage():
    acc = StreamAccumulator()
    deltas = feed(
        acc,
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"reasoning_content": "hmm"}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({}, "stop"),
            chunk(
                no_choices=True,
                usage_={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            ),
        ],
    )
    assert deltas == [ModelDelta(thinking="hmm"), ModelDelta(text="Hel"), ModelDelta(text="lo")]
    r = acc.finish()
    assert r.message.content == (ThinkingBlock("hmm"), TextBlock("Hello"))
    assert r.usage == {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    assert r.stop_reason == "end_turn"


def test_stream_fragmented_interleaved_tool_calls():
    acc = StreamAccumulator()
    tc = lambda **f: chunk({"tool_calls": [f]})  # noqa: E731
    feed(
        acc,
        [
            tc(index=0, id="c0", type="function", function={"name": "get", "arguments": ""}),
            tc(index=1, id="c1", type="function", function={"name": "put", "arguments": '{"k"'}),
            tc(index=0, function={"arguments": '{"city": "Pa'}),
            tc(index=1, function={"arguments": ': [1, {"x": "}"}]}'}),
            tc(index=0, function={"arguments": 'ris"}'}),
            chunk({}, "tool_calls"),
        ],
    )
    r = acc.finish()
    assert r.message.tool_uses == (
        ToolUseBlock("c0", "get", {"city": "Paris"}),
        ToolUseBlock("c1", "put", {"k": [1, {"x": "}"}]}),
    )
    assert r.stop_reason == "tool_use"


def test_stream_tool_calls_without_index_or_with_complete_arguments():
    acc = StreamAccumulator()
    feed(
        acc,
        [
            chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x":'}}]}),
            chunk({"tool_calls": [{"function": {"arguments": "1}"}}]}),
            chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": {"y": 2}}}]}),
            chunk({"tool_calls": [{"id": "b", "function": {"name": "g"}}]}),  # repeated id and name
            chunk({}, "stop"),
        ],
    )
    assert acc.finish().message.tool_uses == (
        ToolUseBlock("a", "f", {"x": 1}),
        ToolUseBlock("b", "g", {"y": 2}),
    )


@pytest.mark.parametrize(
    ("chunks", "match"),
    [
        ([[1]], "not a JSON object"),
        ([{"choices": "x"}], "bad choices"),
        ([chunk(None) | {"choices": [{"index": 0, "delta": 5}]}], "delta is a int"),
        ([chunk({"content": 5})], "content is a int"),
        ([chunk({"tool_calls": {"a": 1}})], "not a list"),
        ([chunk({"tool_calls": ["x"]})], "fragment"),
        ([chunk({"tool_calls": [{"index": 0, "function": "x"}]})], "function"),
        (
            [chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": 3}}]})],
            "arguments are a int",
        ),
    ],
)
def test_stream_malformed_chunks(chunks, match):
    acc = StreamAccumulator()
    with pytest.raises(MalformedModelResponse, match=match):
        feed(acc, chunks)


@pytest.mark.parametrize(
    ("args", "match"),
    [('{"a": 1', "not valid JSON"), ("[1]", "JSON object"), ('"s"', "JSON object")],
)
def test_stream_tool_arguments_checked_once_complete(args, match):
    acc = StreamAccumulator()
    feed(
        acc,
        [
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "a", "function": {"name": "f", "arguments": args}}
                    ]
                }
            ),
            chunk({}, "tool_calls"),
        ],
    )
    with pytest.raises(MalformedModelResponse, match=match):
        acc.finish()


def test_stream_without_choices_or_finish():
    acc = StreamAccumulator()
    feed(acc, [chunk(no_choices=True, usage_={"prompt_tokens": 1})])
    with pytest.raises(MalformedModelResponse, match="without any choice"):
        acc.finish()
    acc = StreamAccumulator()
    feed(acc, [chunk({"content": "cut"})])
    with pytest.raises(ModelUnavailable, match="finish_reason"):
        acc.finish()
