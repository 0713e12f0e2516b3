"""Test helpers: the real ASGI server (uvicorn) on a loopback port in a thread, a model
that echoes (and holds or calls tools on request), SSE reading, tokens."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import uvicorn
from hookagent import AgentConfig, ModelRequest, ModelResponse, Msg, RuntimeContext, ask, hookimpl
from hookagent.messages import ToolUseBlock, new_id
from hookagent_server import BearerTokens, create_app
from hookagent_session import SessionHost

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}


def auth(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[user]}"}


class EchoModel:
    """Replies ``echo: <last user text>``. A text ``deploy X`` calls the deploy tool; ``slow``
    calls the slow tool; while ``hold`` is set (a threading.Event is clear) replies wait."""

    name = "echo"

    def __init__(self, delay: float = 0.0) -> None:
        self.release = threading.Event()
        self.release.set()
        self.delay = delay
        self.calls = 0

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        self.calls += 1
        if self.delay:
            await anyio.sleep(self.delay)
        while not self.release.is_set():
            await anyio.sleep(0.01)
        last = request.messages[-1]
        if last.role == "user":
            text = last.text
            if text.startswith("deploy "):
                use = ToolUseBlock(f"call-{new_id()}", "deploy", {"env": text[7:]})
                return ModelResponse(Msg.assistant([use]))
            if text.startswith("slow "):
                use = ToolUseBlock(f"call-{new_id()}", "slow", {"seconds": float(text[5:])})
                return ModelResponse(Msg.assistant([use]))
            return ModelResponse(Msg.assistant(f"echo: {text}"))
        return ModelResponse(Msg.assistant("done"))


def deploy(env: str) -> str:
    """Deploy the service."""
    return f"deployed to {env}"


async def slow(seconds: float) -> str:
    """Take a while."""
    await anyio.sleep(seconds)
    return "slept"


class AskBeforeDeploy:
    @hookimpl
    def hookagent_wrap_tool_call(self) -> Callable[..., Any]:
        async def middleware(call: Any, ctx: Any, call_next: Any) -> Any:
            if call.use.name == "deploy" and not call.approved:
                return ask(call, f"Deploy to {call.use.input['env']}?")
            return await call_next(call)

        return middleware


def scripted_config() -> AgentConfig:
    """For ``hookagent serve --config server_support:scripted_config`` (env: the log URL)."""
    return AgentConfig(
        name="server-test",
        model=EchoModel(delay=float(os.environ.get("ECHO_DELAY", "0"))),
        tools=[deploy, slow],
        plugins=[AskBeforeDeploy()],
        session_log=os.environ["TEST_SESSION_LOG"],
        plugin_options={"session-log": {"lease_seconds": float(os.environ.get("LEASE", "3"))}},
    )


@contextmanager
def loopback(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1:<free port> in a thread; yield the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextmanager
def serving(
    model: Any | None = None, *, name: str | None = None, **host_options: Any
) -> Iterator[tuple[str, EchoModel]]:
    """An app on memory:// logs with the bearer tokens, served on loopback."""
    name = name or new_id()
    model = model or EchoModel()
    config = AgentConfig(
        name="server-test",
        model=model,
        tools=[deploy, slow],
        plugins=[AskBeforeDeploy(), BearerTokens(TOKENS)],
        session_log=f"memory://log-{name}",
    )
    host = SessionHost(config, inbox=f"memory://inbox-{name}", poll_interval=0.05, **host_options)
    with loopback(create_app(host)) as url:
        yield url, model


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Parse an SSE body: dicts with ``id`` (or None), ``event`` and ``data`` (parsed)."""
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if line == "":
            if "data" in event:
                event["data"] = json.loads(event["data"])
                event.setdefault("id", None)
                yield event
            event = {}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            event[field] = value[1:] if value.startswith(" ") else value


def wait_status(
    client: httpx.Client,
    path: str,
    headers: dict[str, str],
    want: Callable[[dict[str, Any]], bool],
    timeout: float = 15.0,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = client.get(path, headers=headers)
        got.raise_for_status()
        body: dict[str, Any] = got.json()
        if want(body):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; last: {body}")
        time.sleep(0.02)
