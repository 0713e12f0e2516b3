"""The ``hookagent_authenticate`` hook: first answer wins, awaitables, refusals, bad ids,
and no plugin at all (closed by default); the bearer example's token sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from hookagent import AgentConfig, hookimpl
from hookagent.errors import ConfigurationError
from hookagent.messages import new_id
from hookagent_server import AuthenticationFailed, AuthRequest, BearerTokens, create_app
from hookagent_server.bearer import read_tokens_file
from hookagent_session import SessionHost
from server_support import EchoModel, loopback


class HeaderUser:
    """Answers for requests with X-Test-User; refuses 'mallory'; 'bad' gives no usable id."""

    def __init__(self, is_async: bool = False) -> None:
        self.is_async = is_async
        self.seen: list[AuthRequest] = []

    @hookimpl(optionalhook=True)
    def hookagent_authenticate(self, request: AuthRequest) -> Any:
        self.seen.append(request)
        user = request.headers.get("x-test-user")
        if user == "mallory":
            raise AuthenticationFailed("mallory is refused")
        answer: Any = {"bad": "\x00"}.get(user, user) if user else None

        async def later() -> Any:
            return answer

        return later() if self.is_async else answer


def served(*plugins: object) -> Any:
    name = new_id()
    config = AgentConfig(model=EchoModel(), plugins=list(plugins), session_log=f"memory://a-{name}")
    return loopback(create_app(SessionHost(config, inbox=f"memory://a-{name}-i")))


@pytest.mark.parametrize("is_async", [False, True])
def test_hook_hookagent_authenticate(is_async: bool) -> None:
    plugin = HeaderUser(is_async)
    with served(plugin, BearerTokens({"carol": "carol-token-0123456789"})) as url:
        with httpx.Client(base_url=url) as client:
            assert client.get("/v1/me", headers={"X-Test-User": "dave"}).json() == {
                "user_id": "dave"
            }
            seen = plugin.seen[-1]
            assert seen.method == "GET" and seen.path == "/v1/me"
            assert seen.headers["x-test-user"] == "dave" and seen.client
            # the first plugin that answers wins; the others are asked when it does not
            token = {"Authorization": "Bearer carol-token-0123456789"}
            assert client.get("/v1/me", headers=token).json() == {"user_id": "carol"}
            for headers, message in (
                ({"X-Test-User": "mallory"}, "mallory is refused"),
                ({"X-Test-User": "bad"}, "user_id contains a NUL"),
                ({}, "no credentials were accepted"),
            ):
                r = client.get("/v1/me", headers=headers)
                assert r.status_code == 401
                assert r.json()["error"]["type"] == "Unauthenticated"
                assert message in r.json()["error"]["message"]
            # a user_id in the query or body is not an identity
            r = client.get("/v1/me", params={"user_id": "dave"})
            assert r.status_code == 401


def test_no_authentication_plugin_closes_every_v1_route() -> None:
    with served() as url, httpx.Client(base_url=url) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/me").status_code == 401
        assert client.post("/v1/sessions/s/runs", json={"input": "x"}).status_code == 401


def test_bearer_tokens_from_a_file_and_the_environment(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text("# users\nann ann-token-0123456789ab\n\nben ben-token-0123456789ab  # ops\n")
    assert read_tokens_file(f) == {"ann": "ann-token-0123456789ab", "ben": "ben-token-0123456789ab"}
    env = {
        "HOOKAGENT_SERVER_TOKENS_FILE": str(f),
        "HOOKAGENT_SERVER_TOKENS": "cy=cy-token-0123456789abc",
    }
    tokens = BearerTokens.from_env(env)
    assert tokens is not None and set(tokens.users) == {"ann", "ben", "cy"}
    req = AuthRequest("GET", "/v1/me", {"authorization": "Bearer cy-token-0123456789abc"}, {})
    assert tokens.hookagent_authenticate(req) == "cy"
    near = AuthRequest("GET", "/v1/me", {"authorization": "Bearer cy-token-0123456789abd"}, {})
    assert tokens.hookagent_authenticate(near) is None
    assert BearerTokens.from_env({}) is None
    for bad in ({"x": "short"}, {"a": "same-token-0123456789", "b": "same-token-0123456789"}):
        with pytest.raises(ConfigurationError):
            BearerTokens(bad)
    f.write_text("ann\n")
    with pytest.raises(ConfigurationError, match="expected 'user token'"):
        read_tokens_file(f)
