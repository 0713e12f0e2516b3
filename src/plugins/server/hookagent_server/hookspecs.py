"""The hook the server adds: who is calling.

Implement it with ``@hookimpl(optionalhook=True)`` (the specification exists only where the
server plugin is installed).
"""

from __future__ import annotations

from typing import Any

from hookagent.hookspecs import hookspec


@hookspec(firstresult=True)
def hookagent_authenticate(request: Any) -> Any:
    """Map an HTTP request to the trusted user_id it acts for.

    :param request: a ``hookagent_server.AuthRequest`` (method, path, lower-case headers,
        query, client): framework-neutral, so a plugin does not import Starlette.

    Result: the user_id (a str), or None when this plugin does not recognise the request
    (the next plugin is asked). The first str wins. A plugin may return an awaitable
    resolving to the user_id or None (its answer is then final). Raising
    ``AuthenticationFailed`` refuses the request. No answer at all: 401.
    """
