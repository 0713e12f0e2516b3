"""An example authentication plugin: ``Authorization: Bearer <token>`` → a user_id.

Tokens come from ``$HOOKAGENT_SERVER_TOKENS`` (``user=token,user2=token2``) or a file (one
``user token`` pair a line, ``#`` comments; ``$HOOKAGENT_SERVER_TOKENS_FILE`` or
``hookagent serve --tokens-file``). Every configured token is compared in constant time
(``hmac.compare_digest``), so the time taken says nothing about which one came close.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from pathlib import Path

from hookagent.errors import ConfigurationError
from hookagent.hookspecs import hookimpl
from hookagent.store.ids import check_id

from .auth import AuthRequest


class BearerTokens:
    """The plugin object: register it (``AgentConfig(plugins=[BearerTokens(...)])``)."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        """``tokens``: user_id → token. Tokens must be unique and at least 16 characters."""
        pairs: list[tuple[bytes, str]] = []
        for user, token in tokens.items():
            check_id(user, "user_id")
            if not isinstance(token, str) or len(token) < 16:
                raise ConfigurationError(f"bearer token of {user!r}: at least 16 characters")
            pairs.append((token.encode(), user))
        if len({t for t, _ in pairs}) != len(pairs):
            raise ConfigurationError("bearer tokens: two users share a token")
        self._pairs = tuple(pairs)

    @property
    def users(self) -> tuple[str, ...]:
        """Every user a token is configured for (a replica serves their sessions)."""
        return tuple(user for _, user in self._pairs)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BearerTokens | None:
        """From ``$HOOKAGENT_SERVER_TOKENS`` / ``$HOOKAGENT_SERVER_TOKENS_FILE`` (None: unset)."""
        env = os.environ if environ is None else environ
        tokens: dict[str, str] = {}
        if path := env.get("HOOKAGENT_SERVER_TOKENS_FILE"):
            tokens.update(read_tokens_file(path))
        for item in filter(
            None, (p.strip() for p in env.get("HOOKAGENT_SERVER_TOKENS", "").split(","))
        ):
            user, sep, token = item.partition("=")
            if not sep:
                raise ConfigurationError("HOOKAGENT_SERVER_TOKENS is user=token,user2=token2")
            tokens[user.strip()] = token.strip()
        return cls(tokens) if tokens else None

    @hookimpl(optionalhook=True)
    def hookagent_authenticate(self, request: AuthRequest) -> str | None:
        given = request.bearer_token()
        if given is None:
            return None
        raw = given.encode()
        found: str | None = None
        for token, user in self._pairs:  # no early exit: every token is compared
            if hmac.compare_digest(raw, token):
                found = user
        return found


def read_tokens_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """``user token`` a line; blank lines and ``#`` comments skipped."""
    tokens: dict[str, str] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ConfigurationError(f"{path}:{n}: expected 'user token'")
        if parts[0] in tokens:
            raise ConfigurationError(f"{path}:{n}: user {parts[0]!r} given twice")
        tokens[parts[0]] = parts[1]
    return tokens
