"""Runs (the session's commands), interactions and the event streams (docs/service-api.md).

A "run" of this API is an inbox command (``command_id``); the kernel run executing it is
its ``run_id``. Commands answer 202 with the command's view as recorded: the session's
owner (this replica or another) runs it in inbox order.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from hookagent_session import TaskStatus, WaitTimeout

from . import schemas as s
from .errors import ApiError
from .routes import COMMAND, COMMON, CommandIdP, KeyHeader, Session, _errors, _key, _view
from .stream import EventStream, parse_after, run_stream, session_stream

runs = APIRouter(prefix="/v1/sessions/{session_id}")
ACCEPTED: dict[str, Any] = {"response_model": s.TaskView, "status_code": 202, "responses": COMMAND}
SSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}},
    **_errors(400, 404, 503),
}
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", max_length=64)]


@runs.post("/runs", tags=["runs"], **ACCEPTED)
async def submit(session: Session, body: s.SubmitBody, key: KeyHeader = None) -> JSONResponse:
    """Queue new input; it runs after every earlier command of the session has ended."""
    view = await session.submit(body.input, idempotency_key=_key(body.idempotency_key, key))
    return _view(view, 202)


@runs.get("/runs", response_model=s.Runs, responses=_errors(503), tags=["runs"])
async def list_runs(
    session: Session,
    status: Annotated[list[s.Status] | None, Query()] = None,
    after_seq: Annotated[int, Query(ge=0, le=2**53)] = 0,
) -> dict[str, Any]:
    """The session's commands in inbox order."""
    wanted: list[TaskStatus] | None = list(status) if status else None
    views = await session.tasks(status=wanted, after_seq=after_seq)
    return {"runs": [v.to_json() for v in views]}


@runs.get("/runs/{command_id}", response_model=s.TaskView, responses=COMMON, tags=["runs"])
async def get_run(
    session: Session,
    command_id: CommandIdP,
    wait: Annotated[float, Query(ge=0, le=60)] = 0,
) -> JSONResponse:
    """The command's view; with ``wait``, once it is final or after ``wait`` seconds."""
    view = await session.task(command_id)
    if wait > 0 and not view.done:
        try:
            view = await session.wait(command_id, timeout=wait)
        except WaitTimeout:
            view = await session.task(command_id)
    return _view(view)


@runs.post("/runs/{command_id}/interrupt", tags=["runs"], **ACCEPTED)
async def interrupt_run(
    session: Session, command_id: CommandIdP, body: s.KeyBody | None = None, key: KeyHeader = None
) -> JSONResponse:
    """Interrupt this command's run; 409 when it is not the session's running run."""
    view = await session.task(command_id)
    if view.status not in ("starting", "running") or view.run_id is None:
        raise ApiError(409, "NotRunning", f"command {command_id!r} is {view.status}, not running")
    got = await session.interrupt(
        view.run_id, idempotency_key=_key(body.idempotency_key if body else None, key)
    )
    return _view(got, 202)


STOP_DELIVERY_WAIT = 5.0
"""Seconds ``cancel`` waits for its interrupt to reach a running run before it answers."""


@runs.post("/runs/{command_id}/cancel", tags=["runs"], **ACCEPTED)
async def cancel_run(
    session: Session, command_id: CommandIdP, body: s.KeyBody | None = None, key: KeyHeader = None
) -> JSONResponse:
    """Withdraw a queued command (it never runs) or interrupt a running one; 409 if ended."""
    view = await session.task(command_id)
    idem = _key(body.idempotency_key if body else None, key)
    if view.done:
        raise ApiError(
            409, "CommandRejected", f"command {command_id!r} already ended ({view.status})"
        )
    if view.status in ("starting", "running") and view.run_id is not None:
        stop = await session.interrupt(view.run_id, idempotency_key=idem)
        try:  # answer once the run was told to stop, as the interrupt endpoint's command does
            await session.wait(stop.command_id, timeout=STOP_DELIVERY_WAIT)
        except WaitTimeout:
            pass  # the interrupt stays queued; the run's own view says how it ends
        return _view(await session.task(command_id), 202)
    return _view(await session.cancel(command_id), 202)  # queued: withdrawn, never runs


@runs.post("/interrupt", tags=["runs"], **ACCEPTED)
async def interrupt(
    session: Session, body: s.InterruptBody | None = None, key: KeyHeader = None
) -> JSONResponse:
    """Interrupt the running run (``expected_run_id``: only if it is still that one)."""
    body = body or s.InterruptBody()
    view = await session.interrupt(
        body.expected_run_id, idempotency_key=_key(body.idempotency_key, key)
    )
    return _view(view, 202)


@runs.post("/steer", tags=["runs"], **ACCEPTED)
async def steer(session: Session, body: s.SteerBody, key: KeyHeader = None) -> JSONResponse:
    """Interrupt the running run and continue its turn with ``input``, ahead of the queue."""
    view = await session.steer(body.input, idempotency_key=_key(body.idempotency_key, key))
    return _view(view, 202)


@runs.post("/resume", tags=["runs"], **ACCEPTED)
async def resume(session: Session, body: s.ResumeBody, key: KeyHeader = None) -> JSONResponse:
    """Continue the session's latest unfinished turn under a new run."""
    view = await session.resume(
        body.turn_id, input=body.input, idempotency_key=_key(body.idempotency_key, key)
    )
    return _view(view, 202)


@runs.get(
    "/interactions", response_model=s.Interactions, responses=_errors(503), tags=["interactions"]
)
async def interactions(session: Session) -> dict[str, Any]:
    """What the session's suspended turn waits for."""
    pending = await session.pending_interactions()
    return {
        "interactions": [
            {
                "tool_use_id": p.tool_use_id,
                "tool": p.tool,
                "kind": p.kind,
                "prompt": p.prompt,
                "input": dict(p.input),
                "data": dict(p.data),
            }
            for p in pending
        ]
    }


@runs.post("/interactions/{request_id}", tags=["interactions"], **ACCEPTED)
async def answer(
    session: Session, request_id: CommandIdP, body: s.RespondBody, key: KeyHeader = None
) -> JSONResponse:
    """Answer a pending interaction (queued; the turn goes on under a new run)."""
    doc = body.answer.model_dump()
    view = await session.respond(request_id, doc, idempotency_key=_key(body.idempotency_key, key))
    return _view(view, 202)


@runs.get("/events", responses=SSE, tags=["events"], response_class=JSONResponse)
async def session_events(
    request: Request,
    session: Session,
    after: Annotated[int, Query(ge=0, le=2**53)] = 0,
    follow: bool = True,
    last_event_id: LastEventId = None,
) -> EventStream:
    """The session log's events after ``after`` (or ``Last-Event-ID``) as SSE."""
    start = parse_after(last_event_id, after)
    if start is None:
        raise ApiError(400, "BadRequest", "Last-Event-ID is the seq of an event")
    await session.current()  # 503 (host not running) before the stream starts, not inside it
    return session_stream(session, start, follow)


@runs.get("/runs/{command_id}/events", responses=SSE, tags=["events"], response_class=JSONResponse)
async def run_events(
    session: Session, command_id: CommandIdP, last_event_id: LastEventId = None
) -> EventStream:
    """One command's run events (first ``SESSION_RUN_STARTED``), then ``SESSION_TASK_FINAL``."""
    start = parse_after(last_event_id, 0)
    if start is None:
        raise ApiError(400, "BadRequest", "Last-Event-ID is the seq of an event")
    await session.task(command_id)  # 404 before the stream starts
    return run_stream(session, command_id, start)
