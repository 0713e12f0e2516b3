"""The routes (docs/service-api.md). Every ``/v1`` route acts for the user the
authentication hook names, and for nobody else: the user_id is part of every lookup, so
another user's ids answer exactly like ids that do not exist."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse
from hookagent_session import AgentSession
from hookagent_session import TaskView as LibTaskView

from . import schemas as s
from .auth import AuthRequest, authenticate
from .errors import ApiError
from .schemas import ErrorBody

__all__ = ["ErrorBody", "api", "health"]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {c: {"model": ErrorBody} for c in (401, *codes)}


COMMON = _errors(404, 503)
COMMAND = _errors(400, 404, 409, 413, 503)
SessionIdP = Annotated[str, PathParam(pattern=s.ID_PATTERN)]
CommandIdP = Annotated[str, PathParam(pattern=s.ID_PATTERN)]
KeyHeader = Annotated[str | None, Header(alias="Idempotency-Key", pattern=s.ID_PATTERN)]
STATE_SECTIONS = ("summary", "context", "tool_context", "turn_context", "shutdown_interrupted")


def _ctx(request: Request) -> Any:
    return request.app.state.server


async def current_user(request: Request) -> str:
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    query: dict[str, tuple[str, ...]] = {}
    for name, value in request.query_params.multi_items():
        query[name] = (*query.get(name, ()), value)
    client = f"{request.client.host}:{request.client.port}" if request.client else None
    auth = AuthRequest(request.method, request.url.path, headers, query, client)
    return await authenticate(_ctx(request).pm, auth)


User = Annotated[str, Depends(current_user)]


async def session_of(request: Request, session_id: SessionIdP, user: User) -> AgentSession:
    session: AgentSession = _ctx(request).host.session(user, session_id)
    return session


Session = Annotated[AgentSession, Depends(session_of)]


def _key(body_key: str | None, header_key: str | None) -> str | None:
    if body_key is not None and header_key is not None and body_key != header_key:
        raise ApiError(400, "BadRequest", "Idempotency-Key and idempotency_key differ")
    return body_key if body_key is not None else header_key


def _view(view: LibTaskView, status: int = 200) -> JSONResponse:
    return JSONResponse(view.to_json(), status_code=status)


async def _exists(request: Request, session: AgentSession) -> bool:
    store = await session.host.agent.kernel.store()
    if await store.exists(session.user_id, session.session_id):
        return True
    log = _ctx(request).log
    if log is not None and (await log.head(session.user_id, session.session_id)).seq > 0:
        return True
    return bool(await session.tasks())


def _unknown_session(session: AgentSession) -> ApiError:
    return ApiError(404, "UnknownSession", f"no session {session.session_id!r}")


# --------------------------------------------------------------------------- health

health = APIRouter(tags=["health"])


@health.get("/healthz", response_model=s.Health)
async def healthz() -> dict[str, str]:
    """The process answers (liveness)."""
    return {"status": "ok"}


@health.get("/readyz", response_model=s.Ready, responses={503: {"model": ErrorBody}})
async def readyz(request: Request) -> dict[str, str]:
    """The host runs and the session log answers (readiness: route traffic here)."""
    ctx = _ctx(request)
    if not ctx.ready or ctx.log is None:
        raise ApiError(503, "NotReady", "the server is starting or stopping")
    try:
        await ctx.log.head("", "readyz-probe")
    except Exception as exc:
        raise ApiError(
            503, "NotReady", f"the session log does not answer: {type(exc).__name__}"
        ) from None
    return {"status": "ready", "replica_id": ctx.host.replica_id}


# --------------------------------------------------------------------------- sessions

api = APIRouter(prefix="/v1")


@api.get("/me", response_model=s.Me, responses=_errors(), tags=["auth"])
async def me(user: User) -> dict[str, str]:
    """Who the server takes the caller to be."""
    return {"user_id": user}


@api.get("/sessions", response_model=s.Sessions, responses=_errors(503), tags=["sessions"])
async def list_sessions(
    request: Request,
    user: User,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> dict[str, Any]:
    """The caller's sessions that have a log, in a stable order (page with ``cursor``)."""
    log = _ctx(request).log
    if log is None:
        raise ApiError(503, "NotReady", "the server is starting or stopping")
    try:
        page = await log.list_session_ids(user, limit=limit, cursor=cursor or "")
    except ValueError as exc:  # a cursor the backend did not issue
        raise ApiError(400, "BadRequest", f"bad cursor: {exc}") from None
    return {
        "sessions": [{"session_id": sid} for sid in page.session_ids],
        "next_cursor": page.next_cursor,
    }


@api.get(
    "/sessions/{session_id}", response_model=s.SessionSummary, responses=COMMON, tags=["sessions"]
)
async def get_session(request: Request, session: Session) -> dict[str, Any]:
    """A summary: message count, sections, the open turn, the running command, the log's head."""
    if not await _exists(request, session):
        raise _unknown_session(session)
    state = await session.host.agent.get_agent_state(session.user_id, session.session_id)
    current = await session.current()
    log = _ctx(request).log
    head = await log.head(session.user_id, session.session_id) if log is not None else None
    return {
        "session_id": session.session_id,
        "messages": len(state.context),
        "summary": state.summary,
        "sections": [*STATE_SECTIONS, *sorted(state.extensions)],
        "turn_id": state.turn_context.turn_id,
        "pending": len(state.turn_context.pending),
        "current": current.to_json() if current is not None else None,
        "last_seq": head.seq if head is not None else 0,
    }


@api.get(
    "/sessions/{session_id}/state",
    response_model=s.SessionState,
    responses=_errors(400, 404, 503),
    tags=["sessions"],
)
async def get_state(
    request: Request,
    session: Session,
    section: Annotated[list[str] | None, Query(max_length=64)] = None,
) -> dict[str, Any]:
    """The state's sections as JSON (``section`` repeatable; default: all of them)."""
    if not await _exists(request, session):
        raise _unknown_session(session)
    state = await session.host.agent.get_agent_state(session.user_id, session.session_id)
    doc = json.loads(state.to_json())
    everything = {name: doc.get(name) for name in STATE_SECTIONS}
    everything.update({name: doc[name] for name in state.extensions})  # top-level keys
    names = section or list(everything)
    unknown = [n for n in names if n not in everything]
    if unknown:
        raise ApiError(
            400, "UnknownSection", f"no section {unknown[0]!r}", {"known": list(everything)}
        )
    return {"session_id": session.session_id, "sections": {n: everything[n] for n in names}}


@api.post(
    "/sessions/{session_id}/clear", response_model=s.Cleared, responses=COMMON, tags=["sessions"]
)
async def clear(session: Session) -> dict[str, bool]:
    """Clear the history and summary (other sections stay); 409 while a run holds it."""
    cleared = await session.host.agent.clear_context(session.user_id, session.session_id)
    return {"cleared": bool(cleared)}
