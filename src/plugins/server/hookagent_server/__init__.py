"""hookagent-server: one agent's sessions over HTTP.

    app = create_app(SessionHost(config, inbox="redis://127.0.0.1:6379/1"))
    # uvicorn.run(app) — or `hookagent serve --session-log URL --inbox URL`

See docs/server.md (deploying, the auth hook) and docs/service-api.md (the API).

The names below are imported on first use: plugin discovery imports this package in every
process, and ``create_app`` would pull FastAPI into each of them.
"""

from typing import TYPE_CHECKING

from hookagent.lazy import lazy_exports

if TYPE_CHECKING:
    from .app import ServerContext, create_app
    from .auth import AuthenticationFailed, AuthRequest, authenticate
    from .bearer import BearerTokens, read_tokens_file

__all__ = [
    "AuthRequest",
    "AuthenticationFailed",
    "BearerTokens",
    "ServerContext",
    "authenticate",
    "create_app",
    "read_tokens_file",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ServerContext": ".app",
        "create_app": ".app",
        "AuthRequest": ".auth",
        "AuthenticationFailed": ".auth",
        "authenticate": ".auth",
        "BearerTokens": ".bearer",
        "read_tokens_file": ".bearer",
    },
)
