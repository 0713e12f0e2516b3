"""Authentication: the ``hookagent_authenticate`` hook turns a request into a user_id.

The user_id a route acts for comes only from here, never from the request's body, path or
query; with no plugin answering, every ``/v1`` request is refused (closed by default).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import attrs
from hookagent.errors import HookagentError, InvalidIdentifier
from hookagent.store.ids import check_id

from . import hookspecs


class AuthenticationFailed(HookagentError):
    """Raised by an authentication plugin to refuse a request (answered with a 401)."""


@attrs.frozen
class AuthRequest:
    """What an authentication plugin sees of a request."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Lower-case header names; a repeated header's values joined with ``, ``."""
    query: Mapping[str, tuple[str, ...]]
    client: str | None = None

    def bearer_token(self) -> str | None:
        """The token of an ``Authorization: Bearer <token>`` header, if any."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        token = token.strip()
        return token if scheme.lower() == "bearer" and token else None


def ensure_hookspec(pm: Any) -> None:
    """Add the hook's specification to ``pm`` unless the plugin already did."""
    caller = getattr(pm.hook, "hookagent_authenticate", None)
    if caller is None or caller.spec is None:
        pm.add_hookspecs(hookspecs)


async def authenticate(pm: Any, request: AuthRequest) -> str:
    """The request's user_id (``AuthenticationFailed`` when no plugin vouches for it)."""
    result = pm.hook.hookagent_authenticate(request=request)
    if inspect.isawaitable(result):
        result = await result
    if result is None:
        raise AuthenticationFailed("authentication required: no credentials were accepted")
    if not isinstance(result, str):
        raise AuthenticationFailed("the authentication plugin returned no user_id")
    try:
        return check_id(result, "user_id")
    except InvalidIdentifier as exc:
        raise AuthenticationFailed(f"the authentication plugin returned {exc}") from None
