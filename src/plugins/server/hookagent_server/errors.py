"""Every failure as ``{"error": {"type", "message", "status"}}``: one table maps the
library's typed errors to HTTP statuses, and anything unexpected is a 500 that says
nothing about its cause (the traceback goes to the server's log)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from hookagent.errors import (
    HookagentError,
    InvalidIdentifier,
    LeaseHeld,
    StoreUnavailable,
    VersionConflict,
)
from hookagent_session import (
    CommandRejected,
    HostNotRunning,
    IdempotencyConflict,
    InboxBusy,
    InvalidCommand,
    UnknownCommand,
)
from hookagent_session_log import AdminRefused, UncertainToolCalls
from starlette.exceptions import HTTPException

from .auth import AuthenticationFailed

log = logging.getLogger("hookagent_server")


class ApiError(Exception):
    """An error the routes raise with its HTTP status and stable type name."""

    def __init__(self, status: int, type: str, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.detail = status, type, message, detail


STATUS_OF: tuple[tuple[type[BaseException], int], ...] = (
    (AuthenticationFailed, 401),
    (InvalidCommand, 400),
    (InvalidIdentifier, 400),
    (UnknownCommand, 404),
    (IdempotencyConflict, 409),
    (CommandRejected, 409),  # NotRunning, StaleRun
    (LeaseHeld, 409),
    (UncertainToolCalls, 409),  # a crash mid-tool: hookagent log reconcile first
    (AdminRefused, 409),
    (VersionConflict, 409),
    (InboxBusy, 503),
    (StoreUnavailable, 503),
    (HostNotRunning, 503),
)
HTTP_TYPES = {
    400: "BadRequest",
    401: "Unauthenticated",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    422: "RequestValidationError",
}


def body(status: int, type: str, message: str, detail: Any = None) -> dict[str, Any]:
    info: dict[str, Any] = {"type": type, "message": message, "status": status}
    if detail is not None:
        info["detail"] = detail
    return {"error": info}


def respond(status: int, type: str, message: str, detail: Any = None) -> JSONResponse:
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="hookagent"'
    elif status == 503:
        headers["Retry-After"] = "1"
    return JSONResponse(body(status, type, message, detail), status_code=status, headers=headers)


def from_exception(exc: BaseException) -> JSONResponse | None:
    """The response for a library error, or None when it is not one we map."""
    for cls, status in STATUS_OF:
        if isinstance(exc, cls):
            detail: Any = None
            if isinstance(exc, IdempotencyConflict):
                detail = {"command_id": exc.command_id}
            elif isinstance(exc, UncertainToolCalls):
                detail = {"uncertain": [{"id": u.id, "name": u.name} for u in exc.uncertain]}
            name = "SessionBusy" if isinstance(exc, LeaseHeld) else type(exc).__name__
            if isinstance(exc, AuthenticationFailed):
                name = "Unauthenticated"
            return respond(status, name, " ".join(str(exc).split()), detail)
    return None


def install(app: FastAPI) -> None:
    """The exception handlers that give every error the typed body."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return respond(exc.status, exc.type, exc.message, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
            for e in exc.errors()
        ]
        return respond(
            422, "RequestValidationError", "the request does not match the schema", detail
        )

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        status = exc.status_code
        name = HTTP_TYPES.get(status, "HTTPError")
        message = exc.detail if isinstance(exc.detail, str) else name
        return respond(status, name, message)

    @app.exception_handler(HookagentError)  # handled here: not logged as a crash
    async def _library(request: Request, exc: HookagentError) -> JSONResponse:
        return from_exception(exc) or _internal(request, exc)

    @app.exception_handler(Exception)  # Starlette's last resort (it logs the traceback too)
    async def _other(request: Request, exc: Exception) -> JSONResponse:
        return _internal(request, exc)


def _internal(request: Request, exc: BaseException) -> JSONResponse:
    log.error("hookagent-server: %s %s failed", request.method, request.url.path, exc_info=exc)
    return respond(500, "InternalError", "internal error")
