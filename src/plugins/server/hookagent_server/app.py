"""The ASGI application: ``create_app(host)`` serves a ``SessionHost``'s sessions.

FastAPI (on Starlette) because the OpenAPI document is derived from the same typed models
that validate every request, so the served document cannot drift from what the routes
accept, and schemathesis can test the routes against it. The host runs inside the app's
lifespan; authentication is the ``hookagent_authenticate`` hook (``auth.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse
from hookagent.sessionlog import SessionLog, open_session_log
from hookagent_session import SessionHost
from starlette.types import ASGIApp, Receive, Scope, Send

from . import errors, routes, runs
from .auth import ensure_hookspec

MAX_BODY = 1 << 20
INSPECTOR = Path(__file__).parent / "inspector"


class ServerContext:
    """What the routes share: the host, its plugin manager, a handle on the session log."""

    def __init__(self, host: SessionHost) -> None:
        self.host = host
        self.pm = host.agent.kernel.pm
        self.log: SessionLog | None = None
        self.ready = False


def create_app(
    host: SessionHost,
    *,
    manage_host: bool = True,
    max_body: int = MAX_BODY,
    inspector: Path | None = INSPECTOR,
) -> FastAPI:
    """The application serving ``host``. With ``manage_host`` (the default) the app's
    lifespan enters and leaves the host (``async with host``); else the caller runs it."""
    ctx = ServerContext(host)
    ensure_hookspec(ctx.pm)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        spec = host.config.session_log
        assert spec is not None  # SessionHost refuses a config without one
        log = (
            spec
            if not isinstance(spec, str)
            else await open_session_log(spec, plugin_manager=ctx.pm)
        )
        ctx.log = log
        try:
            if manage_host:
                async with host:
                    ctx.ready = True
                    yield
            else:
                ctx.ready = True
                yield
        finally:
            ctx.ready = False
            if isinstance(spec, str):
                await log.aclose()

    app = FastAPI(
        title="hookagent-server",
        version="0.1.0",
        summary="One agent's sessions over HTTP: queued runs, interactions, SSE event streams",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        responses={
            422: {"model": routes.ErrorBody, "description": "the request does not match"},
        },
    )
    app.state.server = ctx
    errors.install(app)
    app.include_router(routes.health)
    app.include_router(routes.api)
    app.include_router(runs.runs)
    if inspector is not None and (inspector / "index.html").is_file():
        _mount_inspector(app, inspector)
    app.add_middleware(BodyLimit, limit=max_body)
    return app


def _mount_inspector(app: FastAPI, root: Path) -> None:
    from starlette.staticfiles import StaticFiles

    @app.get("/", include_in_schema=False)
    async def index(request: Request) -> Any:
        return FileResponse(root / "index.html")

    app.mount("/inspector", StaticFiles(directory=root), name="inspector")


class BodyLimit:
    """A 413 for a request body over ``limit`` bytes (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await _too_large(scope, receive, send, self.limit)
                return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise errors.ApiError(
                        413, "PayloadTooLarge", f"the body is over {self.limit} bytes"
                    )
            return message

        await self.app(scope, limited, send)


async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    response = errors.respond(413, "PayloadTooLarge", f"the body is over {limit} bytes")
    await response(scope, receive, send)
