"""Server-sent events over the session log: durable, resumable with ``Last-Event-ID``.

An event's ``id`` is its log seq, so a client that reconnects (to any replica) resumes
exactly after the last event it saw. The response is a small ASGI callable rather than a
streaming generator: the producer, the keep-alive ticker and the disconnect watcher run in
one task group, so a client that goes away ends the stream (and its log reads) at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from hookagent.sessionlog import LogEvent
from hookagent_session import AgentSession, TaskView
from hookagent_session_log.admin import event_json  # the one JSON form of an event
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

KEEP_ALIVE = 15.0
"""Seconds of silence before a ``: keep-alive`` comment (proxies drop idle connections)."""
STATUS_POLL = 0.25
"""How often a run stream re-reads its command's status (to end when it is final)."""
LIVE = frozenset({"queued", "starting", "running"})
__all__ = ["KEEP_ALIVE", "LIVE", "STATUS_POLL", "event_json", "sse_name"]


def sse_name(log_type: str) -> str:
    """``run/started`` → ``SESSION_RUN_STARTED``."""
    return "SESSION_" + "".join(c if c.isalnum() else "_" for c in log_type).upper()


def frame(e: LogEvent) -> bytes:
    data = json.dumps(event_json(e), separators=(",", ":"), default=str)
    return f"id: {e.seq}\nevent: {sse_name(e.type)}\ndata: {data}\n\n".encode()


def final_frame(view: TaskView) -> bytes:
    data = json.dumps(view.to_json(), separators=(",", ":"), default=str)
    return f"event: SESSION_TASK_FINAL\ndata: {data}\n\n".encode()


def parse_after(last_event_id: str | None, after: int) -> int | None:
    """The seq to resume after (the header wins); None when the header is not a seq."""
    if last_event_id is None or not last_event_id.strip():
        return after
    text = last_event_id.strip()
    if not text.isdigit() or len(text) > 18:
        return None
    return int(text)


Producer = Callable[[Callable[[bytes], Any]], Any]


class EventStream(Response):
    """An ASGI response sending what ``produce(emit)`` emits, with keep-alives."""

    media_type = "text/event-stream"

    def __init__(self, produce: Producer, keep_alive: float = KEEP_ALIVE) -> None:
        super().__init__(status_code=200, media_type=self.media_type)
        self.produce = produce
        self.keep_alive = keep_alive

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),  # nginx: do not buffer the stream
                ],
            }
        )
        lock = anyio.Lock()
        last = [anyio.current_time()]

        async def emit(chunk: bytes) -> None:
            with anyio.CancelScope(shield=True):  # a frame is sent whole or not at all
                async with lock:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    last[0] = anyio.current_time()

        async def ticker() -> None:
            while True:
                await anyio.sleep(max(0.0, last[0] + self.keep_alive - anyio.current_time()))
                if anyio.current_time() - last[0] >= self.keep_alive:
                    await emit(b": keep-alive\n\n")

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        disconnected = False
        async with anyio.create_task_group() as tg:

            async def run_producer() -> None:
                await self.produce(emit)
                tg.cancel_scope.cancel()

            async def run_watch() -> None:
                nonlocal disconnected
                await watch()
                disconnected = True
                tg.cancel_scope.cancel()

            tg.start_soon(run_producer)
            tg.start_soon(ticker)
            tg.start_soon(run_watch)
        if not disconnected:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def session_stream(session: AgentSession, after: int, follow: bool) -> EventStream:
    async def produce(emit: Callable[[bytes], Any]) -> None:
        events = session.events(after, follow=follow)
        try:
            async for e in events:
                await emit(frame(e))
        finally:
            await _close(events)

    return EventStream(produce)


def run_stream(session: AgentSession, command_id: str, after: int) -> EventStream:
    """One command's run(s): its log events, then ``SESSION_TASK_FINAL`` once it is final."""
    prefix = f"{command_id}."

    async def produce(emit: Callable[[bytes], Any]) -> None:
        seen = [after]

        async def forward(events: AsyncIterator[LogEvent]) -> None:
            try:
                async for e in events:
                    if e.run_id is not None and e.run_id.startswith(prefix):
                        await emit(frame(e))
                    seen[0] = e.seq
            finally:
                await _close(events)

        view = await session.task(command_id)
        async with anyio.create_task_group() as tg:
            if view.status in LIVE:
                tg.start_soon(forward, session.events(after, follow=True))
                while view.status in LIVE:
                    await anyio.sleep(STATUS_POLL)
                    view = await session.task(command_id)
            tg.cancel_scope.cancel()
        # final: send what the log holds of it up to the head, then the view
        await forward(session.events(seen[0], follow=False))
        await emit(final_frame(view))

    return EventStream(produce)


async def _close(it: AsyncIterator[Any]) -> None:
    aclose = getattr(it, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await aclose()


__all__ = ["EventStream", "event_json", "parse_after", "run_stream", "session_stream"]
