"""Test helpers: a model whose replies wait on a gate, an ASK middleware, raw inbox reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from hookagent import ModelRequest, ModelResponse, Msg, RuntimeContext, ask, hookimpl
from hookagent.messages import ToolUseBlock, new_id
from hookagent.sessionlog import SessionLog
from hookagent_session.inbox import inbox_session


class GatedModel:
    """Replies in order; while ``hold`` is set, each reply waits until it is cleared.

    A reply is a text, a ``("tool", name, args)`` triple (a tool call), or an exception.
    ``started`` is set each time a request arrives; ``requests`` keeps the last user texts.
    """

    name = "gated"

    def __init__(self, replies: list[Any] | None = None, *, default: str = "ok") -> None:
        self.replies = list(replies or [])
        self.default = default
        self.hold = False
        self._released = anyio.Event()
        self.started = anyio.Event()
        self.calls = 0
        self.seen: list[str] = []

    def block(self) -> None:
        self.hold = True
        self._released = anyio.Event()

    def release(self) -> None:
        self.hold = False
        self._released.set()

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        self.calls += 1
        users = [m.text for m in request.messages if m.role == "user"]
        self.seen.append(users[-1] if users else "")
        self.started.set()
        self.started = anyio.Event()
        if self.hold:
            await self._released.wait()
        reply = self.replies.pop(0) if self.replies else self.default
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, tuple):
            _, name, args = reply
            return ModelResponse(Msg.assistant([ToolUseBlock(f"call-{new_id()}", name, args)]))
        return ModelResponse(Msg.assistant(str(reply)))


def deploy(env: str) -> str:
    """Deploy the service."""
    return f"deployed to {env}"


class AskBeforeDeploy:
    """A tool middleware that asks before every ``deploy``."""

    @hookimpl
    def hookagent_wrap_tool_call(self) -> Callable[..., Any]:
        async def middleware(call: Any, ctx: Any, call_next: Any) -> Any:
            if call.use.name == "deploy" and not call.approved:
                return ask(call, f"Deploy to {call.use.input['env']}?")
            return await call_next(call)

        return middleware


async def statuses(inbox: SessionLog, user_id: str, session_id: str, command_id: str) -> list[str]:
    """Every status recorded for the command, in order (the raw inbox, not the fold)."""
    events = await inbox.read_after(user_id, inbox_session(session_id), 0)
    return [
        e.payload["status"]
        for e in events
        if e.type == "inbox/status" and e.payload.get("command_id") == command_id
    ]


async def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy."""
    with anyio.fail_after(timeout):
        while True:
            got = check()
            if hasattr(got, "__await__"):
                got = await got
            if got:
                return got
            await anyio.sleep(0.01)
