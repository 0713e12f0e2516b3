"""A scripted OpenAI-compatible server on loopback, for tests (this plugin's and the CLI's).

It speaks real HTTP on ``127.0.0.1`` from a background thread, so the client under test goes
through its whole stack (sockets, SSE decoding, timeouts)::

    with fake_openai_server([text_reply("hi"), error_reply(429), text_reply("ok")]) as srv:
        model = OpenAIChatModel.from_options(model="m", base_url=srv.base_url)
        ...
        assert srv.attempts == 2
        assert srv.requests[0].body["messages"][0]["role"] == "user"

Each ``POST /v1/chat/completions`` takes the next script entry: a ``Reply`` or a callable
``(RecordedRequest) -> Reply``. When the script runs out, ``default`` answers (500 if none).
Only the standard library is used, so anything can import it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received; ``body`` is the decoded JSON (None if it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any


@dataclass(frozen=True)
class Pause:
    """Inside ``Reply.events``: wait this long before the next event (a stalling stream)."""

    seconds: float


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``events`` makes it an SSE stream (each a dict sent as JSON, a raw ``str`` data line, or a
    ``Pause``), ending with ``data: [DONE]`` unless ``done`` is False. ``delay`` waits before the status
    line (past the client's timeout it is a hang); ``event_delay`` waits before each event.
    ``drop`` closes the connection without answering.
    """

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"
    events: tuple[dict[str, Any] | str | Pause, ...] | None = None
    done: bool = True
    delay: float = 0.0
    event_delay: float = 0.0
    drop: bool = False


Script = Reply | Callable[[RecordedRequest], Reply]


# ----------------------------------------------------------------------------- reply builders


def json_reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode(), tuple((headers or {}).items()))


def raw_reply(
    body: bytes | str, status: int = 200, content_type: str = "application/json"
) -> Reply:
    data = body.encode() if isinstance(body, str) else body
    return Reply(status, data, content_type=content_type)


def error_reply(
    status: int,
    message: str = "scripted error",
    *,
    code: str | int | None = None,
    type: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An OpenAI-style error body: ``{"error": {"message", "type", "code", "param"}}``."""
    error = {"message": message, "type": type or "error", "code": code, "param": None}
    return json_reply({"error": error}, status, headers)


def usage(prompt: int = 10, completion: int = 5) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def tool_call(
    name: str, arguments: dict[str, Any] | str, call_id: str | None = None
) -> dict[str, Any]:
    """A wire tool call; ``arguments`` as a dict is JSON-encoded, a str is sent verbatim."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id or f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def completion(
    content: str | None = None,
    *,
    tool_calls: Sequence[dict[str, Any]] = (),
    finish_reason: str | None = None,
    usage_: dict[str, int] | None = None,
    model: str = "fake-model",
    extra_message: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **(extra_message or {})}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": usage_ if usage_ is not None else usage(),
    }


def text_reply(content: str, **kw: Any) -> Reply:
    return json_reply(completion(content, **kw))


def tool_calls_reply(*calls: dict[str, Any], content: str | None = None, **kw: Any) -> Reply:
    return json_reply(completion(content, tool_calls=calls, **kw))


def chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    model: str = "fake-model",
    usage_: dict[str, int] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    """A ``chat.completion.chunk``; ``no_choices`` makes the final usage-only chunk."""
    data: dict[str, Any] = {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }
    if usage_ is not None:
        data["usage"] = usage_
    return data


def stream_reply(events: Iterable[dict[str, Any] | str | Pause], **kw: Any) -> Reply:
    return Reply(events=tuple(events), content_type="text/event-stream", **kw)


def text_stream(pieces: Sequence[str], *, usage_: dict[str, int] | None = None, **kw: Any) -> Reply:
    """Text streamed piece by piece, then a finish chunk and a usage-only chunk."""
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces]
    events.append(chunk({}, "stop"))
    events.append(chunk(no_choices=True, usage_=usage_ or usage()))
    return stream_reply(events, **kw)


def tool_call_stream(
    calls: Sequence[tuple[str, str, Sequence[str]]], *, text: Sequence[str] = (), **kw: Any
) -> Reply:
    """Tool calls streamed as OpenAI does: id and name first, then argument fragments.

    ``calls`` holds ``(call_id, name, argument_fragments)``; fragments of different calls are
    interleaved to prove the client joins them by index.
    """
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": None})]
    events += [chunk({"content": t}) for t in text]
    for index, (call_id, name, _) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
    longest = max((len(f) for _, _, f in calls), default=0)
    for step in range(longest):
        for index, (_, _, fragments) in enumerate(calls):
            if step < len(fragments):
                frag = {"index": index, "function": {"arguments": fragments[step]}}
                events.append(chunk({"tool_calls": [frag]}))
    events.append(chunk({}, "tool_calls"))
    events.append(chunk(no_choices=True, usage_=usage()))
    return stream_reply(events, **kw)


def tool_calls_unless_streamed(
    *calls: dict[str, Any], streamed_text: str = "I would call a tool."
) -> Callable[[RecordedRequest], Reply]:
    """A server whose streaming path drops tool calls (LiteLLM's mock models do this).

    A whole (non-streamed) request gets ``calls``; a streamed one gets ``streamed_text`` and
    no tool call, so only a client that does not stream sees the calls.
    """

    def answer(request: RecordedRequest) -> Reply:
        if isinstance(request.body, dict) and request.body.get("stream"):
            return text_stream([streamed_text])
        return tool_calls_reply(*calls)

    return answer


def hang(seconds: float = 30.0) -> Reply:
    """Answer nothing for ``seconds`` (released early when the server stops)."""
    return Reply(delay=seconds, body=json.dumps(completion("too late")).encode())


def drop() -> Reply:
    """Close the connection without an answer."""
    return Reply(drop=True)


# ----------------------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms stalls

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(json_reply({"object": "list", "data": [{"id": "fake-model"}]}))
        else:
            self._send(error_reply(404, f"no route {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = RecordedRequest(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body
        )
        if self.path != CHAT_PATH:
            self._send(error_reply(404, f"no route {self.path}"))
            return
        self._send(self.server.owner._next_reply(req))

    def _send(self, reply: Reply) -> None:
        owner = self.server.owner
        if reply.delay and owner._stopping.wait(reply.delay):
            self.close_connection = True
            return
        if reply.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)
            return
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers:
                self.send_header(name, value)
            if reply.events is None:
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for event in reply.events:
                if reply.event_delay and owner._stopping.wait(reply.event_delay):
                    return
                if isinstance(event, Pause):
                    if owner._stopping.wait(event.seconds):
                        return
                    continue
                data = event if isinstance(event, str) else json.dumps(event)
                self.wfile.write(f"data: {data}\n\n".encode())
                self.wfile.flush()
            if reply.done:
                self.wfile.write(b"data: [DONE]\n\n")
        except OSError:  # the client went away (timed out): nothing to answer
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer is expected in timeout tests


@dataclass
class FakeOpenAIServer:
    """The server's state: the script left, what it received, how often it was asked."""

    script: list[Script] = field(default_factory=list)
    default: Script | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    _queue: deque[Script] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: _Server | None = None
    _thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def attempts(self) -> int:
        """Chat-completions requests received so far (retries included)."""
        with self._lock:
            return sum(1 for r in self.requests if r.path == CHAT_PATH)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    def push(self, *replies: Script) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self, req: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(req)
            entry = self._queue.popleft() if self._queue else self.default
        if entry is None:
            return error_reply(500, "fake server: script exhausted", type="script_exhausted")
        return entry(req) if callable(entry) else entry

    def start(self) -> FakeOpenAIServer:
        self._queue.extend(self.script)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


@contextlib.contextmanager
def fake_openai_server(
    script: Iterable[Script] = (), *, default: Script | None = None
) -> Iterator[FakeOpenAIServer]:
    """Run a ``FakeOpenAIServer`` on a free loopback port for the ``with`` block."""
    server = FakeOpenAIServer(script=list(script), default=default).start()
    try:
        yield server
    finally:
        server.stop()
