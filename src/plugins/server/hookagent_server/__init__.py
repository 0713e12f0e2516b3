"""hookagent-server: one agent's sessions over HTTP.

    app = create_app(SessionHost(config, inbox="redis://127.0.0.1:6379/1"))
    # uvicorn.run(app) — or `hookagent serve --session-log URL --inbox URL`

See docs/server.md (deploying, the auth hook) and docs/service-api.md (the API).
"""

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
