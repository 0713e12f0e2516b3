"""The provider against a real HTTP server on loopback that speaks the chat-completions protocol."""

import json
import socket
import time

import pytest
from hookagent.errors import (
    ContextLengthExceeded,
    MalformedModelResponse,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelUnavailable,
)
from hookagent.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.models import ModelDelta, ModelRequest, ModelResponse, ToolSpec
from hookagent_model_openai import OpenAIChatModel
from hookagent_model_openai.testing import (
    Pause,
    chunk,
    completion,
    drop,
    error_reply,
    fake_openai_server,
    hang,
    json_reply,
    raw_reply,
    stream_reply,
    text_reply,
    text_stream,
    tool_call,
    tool_call_stream,
    tool_calls_reply,
    usage,
)

pytestmark = pytest.mark.anyio

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def make(srv, **kw) -> OpenAIChatModel:
    kw.setdefault("model", "test-model")
    kw.setdefault("timeout", 5)
    kw.setdefault("backoff_base", 0.001)
    kw.setdefault("backoff_max", 0.01)
    return OpenAIChatModel.from_options(base_url=srv.base_url, **kw)


def request(*msgs: Msg, **kw) -> ModelRequest:
    return ModelRequest(list(msgs) or [Msg.user("hi")], **kw)


async def collect(model, req):
    """Run a stream; check it ends with exactly one ModelResponse."""
    items = [item async for item in model.stream(req, None)]
    assert items and isinstance(items[-1], ModelResponse)
    assert all(isinstance(i, ModelDelta) for i in items[:-1])
    return items[:-1], items[-1]


async def run(model, req, mode):
    if mode == "stream":
        return (await collect(model, req))[1]
    return await model.generate(req, None)


# ------------------------------------------------------------------------------ happy paths


async def test_plain_answer_and_what_was_sent():
    with fake_openai_server([text_reply("Hello there")]) as srv:
        async with make(srv, api_key="sk-test", temperature=0.2, max_tokens=64) as model:
            req = request(
                Msg.user("hi"), system="Be kind.", options={"temperature": 0.7, "seed": 3}
            )
            resp = await model.generate(req, None)
        assert resp.message.text == "Hello there" and resp.stop_reason == "end_turn"
        assert resp.usage == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        (sent,) = srv.requests
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == "Bearer sk-test"
        assert sent.body == {
            "model": "test-model",
            "temperature": 0.7,
            "max_tokens": 64,
            "seed": 3,
            "messages": [
                {"role": "system", "content": "Be kind."},
                {"role": "user", "content": "hi"},
            ],
        }


async def test_server_specific_options_pass_through_untouched():
    extra = {"top_k": 20, "keep_alive": "5m", "cache_prompt": True, "timeout": 9}
    with fake_openai_server([text_stream(["ok"])]) as srv:
        async with make(srv, repeat_penalty=1.1) as model:
            await collect(model, request(options=extra))
        sent = srv.requests[0].body
        assert {k: sent[k] for k in extra} == extra  # "timeout" is a body field here too
        assert sent["repeat_penalty"] == 1.1 and sent["stream"] is True


async def test_local_server_without_key_gets_a_placeholder():
    with fake_openai_server([text_reply("ok")]) as srv:
        async with make(srv) as model:
            await model.generate(request(), None)
        assert srv.requests[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize("mode", ["generate", "stream"])
async def test_tool_round_trip_links_call_ids(mode):
    first = (
        tool_calls_reply(tool_call("get_weather", {"city": "Paris"}, "call_abc"))
        if mode == "generate"
        else tool_call_stream([("call_abc", "get_weather", ['{"ci', 'ty": ', '"Paris"}'])])
    )
    final = text_reply("18C in Paris") if mode == "generate" else text_stream(["18C ", "in Paris"])
    with fake_openai_server([first, final]) as srv:
        async with make(srv) as model:
            history = [Msg.user("Weather in Paris?")]
            resp = await run(model, request(*history, tools=[WEATHER]), mode)
            (use,) = resp.message.tool_uses
            assert use == ToolUseBlock("call_abc", "get_weather", {"city": "Paris"})
            assert resp.stop_reason == "tool_use"
            history += [
                resp.message,
                Msg("tool", [ToolResultBlock(use.id, use.name, (TextBlock("18C"),))]),
            ]
            resp = await run(model, request(*history, tools=[WEATHER]), mode)
            assert resp.message.text == "18C in Paris"
        first_req, second_req = (r.body for r in srv.requests)
        assert first_req["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": WEATHER.parameters,
                    "description": WEATHER.description,
                },
            }
        ]
        assert (first_req.get("stream") is True) == (mode == "stream")
        assert second_req["messages"][1]["tool_calls"][0]["id"] == "call_abc"
        assert json.loads(second_req["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {
            "city": "Paris"
        }
        assert second_req["messages"][2] == {
            "role": "tool",
            "tool_call_id": "call_abc",
            "content": "18C",
        }


async def test_stream_text_deltas_and_usage():
    with fake_openai_server([text_stream(["Hel", "lo", " world"], usage_=usage(7, 3))]) as srv:
        async with make(srv) as model:
            deltas, resp = await collect(model, request())
        assert [d.text for d in deltas] == ["Hel", "lo", " world"]
        assert resp.message.text == "Hello world" and resp.stop_reason == "end_turn"
        assert resp.usage == {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
        body = srv.requests[0].body
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_stream_delivers_chunks_as_they_arrive():
    with fake_openai_server([text_stream(["a", "b", "c", "d"], event_delay=0.08)]) as srv:
        async with make(srv) as model:
            stamps = []
            async for item in model.stream(request(), None):
                stamps.append((time.monotonic(), item))
        first_delta = next(t for t, i in stamps if isinstance(i, ModelDelta))
        assert stamps[-1][0] - first_delta >= 0.2  # the first delta came long before the end


async def test_stream_request_answered_with_whole_json():
    whole = json_reply(completion("all at once", extra_message={"reasoning_content": "hm"}))
    with fake_openai_server([whole]) as srv:
        async with make(srv) as model:
            deltas, resp = await collect(model, request())
        assert deltas == [ModelDelta(text="all at once", thinking="hm")]
        assert resp.message.text == "all at once" and srv.requests[0].body["stream"] is True


async def test_stream_closed_early_releases_the_connection():
    slow = stream_reply([chunk({"content": "first"}), Pause(10), chunk({}, "stop")])
    with fake_openai_server([slow, text_reply("next")]) as srv:
        async with make(srv) as model:
            start = time.monotonic()
            gen = model.stream(request(), None)
            assert await gen.__anext__() == ModelDelta(text="first")
            await gen.aclose()
            assert time.monotonic() - start < 3
            assert (await model.generate(request(), None)).message.text == "next"


async def test_stream_fragmented_interleaved_tool_calls():
    calls = [
        ("call_1", "get_weather", ['{"city"', ': "Par', 'is"}']),
        ("call_2", "get_weather", ["{", '"city": "Oslo"', "}"]),
    ]
    with fake_openai_server([tool_call_stream(calls, text=["Checking", " both."])]) as srv:
        async with make(srv) as model:
            deltas, resp = await collect(model, request(tools=[WEATHER]))
    assert "".join(d.text for d in deltas) == "Checking both."
    assert resp.message.tool_uses == (
        ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("call_2", "get_weather", {"city": "Oslo"}),
    )
    assert resp.message.text == "Checking both."


# ------------------------------------------------------------------------------ retries


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize(
    "failure", [error_reply(429), error_reply(500), error_reply(503), error_reply(408), drop()]
)
async def test_transient_failure_then_success(mode, failure):
    ok = text_reply("fine") if mode == "generate" else text_stream(["fi", "ne"])
    with fake_openai_server([failure, ok]) as srv:
        async with make(srv, max_retries=2) as model:
            resp = await run(model, request(), mode)
            assert model.attempts == 2
        assert resp.message.text == "fine"
        assert srv.attempts == 2
        assert srv.requests[0].body == srv.requests[1].body  # the same request again


@pytest.mark.parametrize("mode", ["generate", "stream"])
async def test_rate_limited_forever(mode):
    with fake_openai_server(
        default=error_reply(429, "slow down", code="rate_limit_exceeded")
    ) as srv:
        async with make(srv, max_retries=3) as model:
            with pytest.raises(ModelRateLimited, match="after 4 attempts") as info:
                await run(model, request(), mode)
        assert srv.attempts == 4
        assert "slow down" in str(info.value)


async def test_no_retries_when_max_retries_is_zero():
    with fake_openai_server(default=error_reply(500)) as srv:
        async with make(srv, max_retries=0) as model:
            with pytest.raises(ModelUnavailable, match="after 1 attempt"):
                await model.generate(request(), None)
        assert srv.attempts == 1


async def test_server_errors_forever_are_unavailable():
    with fake_openai_server(default=error_reply(502, "bad gateway")) as srv:
        async with make(srv, max_retries=2) as model:
            with pytest.raises(ModelUnavailable, match="after 3 attempts"):
                await model.generate(request(), None)
        assert srv.attempts == 3


async def test_retry_after_is_honoured():
    with fake_openai_server(
        [error_reply(429, headers={"Retry-After": "0.4"}), text_reply("ok")]
    ) as srv:
        async with make(srv, max_retries=1) as model:
            start = time.monotonic()
            await model.generate(request(), None)
            assert time.monotonic() - start >= 0.4  # the backoff alone would be ~1 ms
        assert srv.attempts == 2


async def test_retry_after_ms_is_honoured():
    with fake_openai_server(
        [error_reply(503, headers={"retry-after-ms": "300"}), text_reply("ok")]
    ) as srv:
        async with make(srv, max_retries=1) as model:
            start = time.monotonic()
            await model.generate(request(), None)
            assert time.monotonic() - start >= 0.3


async def test_retry_after_longer_than_allowed_stops_at_once():
    with fake_openai_server(default=error_reply(429, headers={"Retry-After": "3600"})) as srv:
        async with make(srv, max_retries=5, max_retry_after=10) as model:
            start = time.monotonic()
            with pytest.raises(ModelRateLimited, match="asked to wait 3600"):
                await model.generate(request(), None)
            assert time.monotonic() - start < 2
        assert srv.attempts == 1


@pytest.mark.parametrize("mode", ["generate", "stream"])
async def test_hanging_server_times_out(mode):
    with fake_openai_server(default=hang(30)) as srv:
        async with make(srv, timeout=0.3, max_retries=1) as model:
            start = time.monotonic()
            with pytest.raises(ModelUnavailable, match=r"timed out.*after 2 attempts"):
                await run(model, request(), mode)
            assert time.monotonic() - start < 3
        assert srv.attempts == 2


async def test_unreachable_server():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    model = OpenAIChatModel.from_options(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.001
    )
    async with model:
        with pytest.raises(ModelUnavailable, match="cannot reach the server"):
            await model.generate(request(), None)
        assert model.attempts == 2


async def test_stream_stalling_after_output_is_not_retried():
    stalled = stream_reply([chunk({"content": "partial"}), Pause(5), chunk({"content": " more"})])
    with fake_openai_server([stalled], default=text_stream(["never"])) as srv:
        async with make(srv, timeout=0.3, max_retries=3) as model:
            shown = []
            with pytest.raises(ModelUnavailable, match="mid-stream"):
                async for item in model.stream(request(), None):
                    shown.append(item)
        assert shown == [ModelDelta(text="partial")]
        assert srv.attempts == 1


async def test_stream_cut_before_finish_is_unavailable():
    cut = stream_reply([chunk({"content": "half an ans"})], done=False)
    with fake_openai_server([cut]) as srv:
        async with make(srv, max_retries=2) as model:
            with pytest.raises(ModelUnavailable, match="finish_reason"):
                await collect(model, request())
        assert srv.attempts == 1  # text was shown: a retry would repeat it


async def test_stream_cut_before_any_output_is_retried():
    cut = stream_reply([chunk({"role": "assistant"})], done=False)
    with fake_openai_server([cut, text_stream(["ok"])]) as srv:
        async with make(srv, max_retries=2) as model:
            deltas, resp = await collect(model, request())
        assert [d.text for d in deltas] == ["ok"] and resp.message.text == "ok"
        assert srv.attempts == 2


# ------------------------------------------------------------------------------ typed errors

CONTEXT_ERRORS = [
    error_reply(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        code="context_length_exceeded",
        type="invalid_request_error",
    ),
    error_reply(400, "This model's maximum context length is 4096 tokens."),  # vLLM
    error_reply(
        400,
        "the request exceeds the available context size, try increasing it",
        code=400,
        type="exceed_context_size_error",
    ),  # llama.cpp server
]

ERROR_CASES = {
    "401": (error_reply(401, "Incorrect API key", code="invalid_api_key"), ModelAuthError, 1),
    "403": (error_reply(403, "not allowed"), ModelAuthError, 1),
    "ctx-openai": (CONTEXT_ERRORS[0], ContextLengthExceeded, 1),
    "ctx-vllm": (CONTEXT_ERRORS[1], ContextLengthExceeded, 1),
    "ctx-llamacpp": (CONTEXT_ERRORS[2], ContextLengthExceeded, 1),
    "400-other": (error_reply(400, "unknown parameter foo"), ModelError, 1),
    "404-model": (error_reply(404, "model 'x' not found"), ModelError, 1),
    "bad-json": (raw_reply("{not json"), MalformedModelResponse, 1),
    "html-200": (
        raw_reply("<html>proxy</html>", content_type="text/html"),
        MalformedModelResponse,
        1,
    ),
    "no-choices": (json_reply({"id": "x", "object": "chat.completion"}), MalformedModelResponse, 1),
    "args-not-json": (
        tool_calls_reply(tool_call("f", "{'city': 'Paris'}")),
        MalformedModelResponse,
        1,
    ),
    "args-array": (tool_calls_reply(tool_call("f", "[1]")), MalformedModelResponse, 1),
    "500x3": (error_reply(500, "boom"), ModelUnavailable, 3),
    "429x3": (error_reply(429), ModelRateLimited, 3),
    "429-quota": (error_reply(429, "no credit", code="insufficient_quota"), ModelRateLimited, 1),
}

STREAM_ERROR_CASES = {
    "401": (error_reply(401), ModelAuthError, 1),
    "ctx": (CONTEXT_ERRORS[0], ContextLengthExceeded, 1),
    "bad-json-event": (stream_reply([chunk({"content": "x"}), "{oops"]), MalformedModelResponse, 1),
    "bad-json-first": (stream_reply(["{oops"]), MalformedModelResponse, 1),
    "non-object-event": (stream_reply(["[1, 2]"]), MalformedModelResponse, 1),
    "args-not-json": (
        tool_call_stream([("c", "f", ['{"a": ', "nope}"])]),
        MalformedModelResponse,
        1,
    ),
    "args-number": (tool_call_stream([("c", "f", ["4", "2"])]), MalformedModelResponse, 1),
    "error-event-ctx": (
        stream_reply([{"error": {"message": "maximum context length is 10 tokens"}}]),
        ContextLengthExceeded,
        1,
    ),
    "error-event-midstream": (
        stream_reply([chunk({"content": "a"}), {"error": {"message": "engine died"}}]),
        ModelUnavailable,
        1,
    ),
    "only-done": (stream_reply([]), MalformedModelResponse, 1),
    "500x3": (error_reply(500), ModelUnavailable, 3),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
async def test_generate_errors_are_typed(case):
    reply, expected, attempts = ERROR_CASES[case]
    with fake_openai_server(default=reply) as srv:
        async with make(srv, max_retries=2) as model:
            with pytest.raises(ModelError) as info:
                await model.generate(request(), None)
    assert type(info.value) is expected, repr(info.value)
    assert type(info.value).__module__ == "hookagent.errors"
    assert "openai:test-model" in str(info.value)
    assert srv.attempts == attempts


@pytest.mark.parametrize("case", list(STREAM_ERROR_CASES))
async def test_stream_errors_are_typed(case):
    reply, expected, attempts = STREAM_ERROR_CASES[case]
    with fake_openai_server(default=reply) as srv:
        async with make(srv, max_retries=2) as model:
            with pytest.raises(ModelError) as info:
                await collect(model, request())
    assert type(info.value) is expected, repr(info.value)
    assert type(info.value).__module__ == "hookagent.errors"
    assert srv.attempts == attempts


async def test_error_inside_a_200_answer():
    body = {"error": {"message": "prompt is too long for this model", "type": "invalid_request"}}
    with fake_openai_server([json_reply(body)]) as srv:
        async with make(srv) as model:
            with pytest.raises(ContextLengthExceeded):
                await model.generate(request(), None)


# ------------------------------------------------------------------------------ lifecycle


async def test_aclose_is_idempotent_and_final():
    with fake_openai_server(default=text_reply("x")) as srv:
        model = make(srv)
        await model.generate(request(), None)
        assert not model.closed
        await model.aclose()
        await model.aclose()
        assert model.closed
        with pytest.raises(ModelUnavailable, match="closed"):
            await model.generate(request(), None)
        with pytest.raises(ModelUnavailable, match="closed"):
            await collect(model, request())
        assert srv.attempts == 1
