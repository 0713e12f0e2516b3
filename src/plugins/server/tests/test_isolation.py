"""The cross-user matrix: every /v1 route, called by bob with alice's ids, answers exactly
as it does for ids that do not exist, shows nothing of alice's, and changes nothing of hers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from server_support import auth, serving, sse_events

A, B = auth("alice"), auth("bob")
SECRET = "alice-secret-text"

# (method, path) -> (body, query): what bob sends; {sid}, {cid}, {rid} are filled in
MATRIX: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {
    ("GET", "/v1/me"): (None, {}),
    ("GET", "/v1/sessions"): (None, {}),
    ("GET", "/v1/sessions/{session_id}"): (None, {}),
    ("GET", "/v1/sessions/{session_id}/state"): (None, {}),
    ("POST", "/v1/sessions/{session_id}/clear"): (None, {}),
    ("POST", "/v1/sessions/{session_id}/runs"): ({"input": "bob's"}, {}),
    ("GET", "/v1/sessions/{session_id}/runs"): (None, {}),
    ("GET", "/v1/sessions/{session_id}/runs/{command_id}"): (None, {}),
    ("POST", "/v1/sessions/{session_id}/runs/{command_id}/interrupt"): ({}, {}),
    ("POST", "/v1/sessions/{session_id}/runs/{command_id}/cancel"): ({}, {}),
    ("POST", "/v1/sessions/{session_id}/interrupt"): ({}, {}),
    ("POST", "/v1/sessions/{session_id}/steer"): ({"input": "stop"}, {}),
    ("POST", "/v1/sessions/{session_id}/resume"): ({"turn_id": "{turn}"}, {}),
    ("GET", "/v1/sessions/{session_id}/interactions"): (None, {}),
    ("POST", "/v1/sessions/{session_id}/interactions/{request_id}"): (
        {"answer": {"kind": "approve"}},
        {},
    ),
    ("GET", "/v1/sessions/{session_id}/events"): (None, {"follow": "false"}),
    ("GET", "/v1/sessions/{session_id}/runs/{command_id}/events"): (None, {}),
}


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[httpx.Client, dict[str, str]]]:
    with serving() as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        r = client.post("/v1/sessions/private/runs", json={"input": SECRET}, headers=A)
        done = client.get(
            f"/v1/sessions/private/runs/{r.json()['command_id']}", params={"wait": 20}, headers=A
        ).json()
        asked = client.post("/v1/sessions/private/runs", json={"input": "deploy x"}, headers=A)
        client.get(
            f"/v1/sessions/private/runs/{asked.json()['command_id']}",
            params={"wait": 20},
            headers=A,
        )
        pending = client.get("/v1/sessions/private/interactions", headers=A).json()
        ids = {
            "session_id": "private",
            "command_id": done["command_id"],
            "request_id": pending["interactions"][0]["tool_use_id"],
            "turn": done["turn_id"],
            "run_id": done["run_id"],
        }
        yield client, ids


def call(
    client: httpx.Client, method: str, path: str, ids: dict[str, str], headers: dict[str, str]
) -> tuple[int, Any]:
    body, query = MATRIX[(method, path)]
    url = path.format(**ids)
    text = None if body is None else json.dumps(body).replace("{turn}", ids["turn"])
    hdrs = {**headers, "Content-Type": "application/json"}
    with client.stream(method, url, params=query, content=text, headers=hdrs) as resp:
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            return resp.status_code, list(sse_events(resp))
        resp.read()
        return resp.status_code, resp.json()


def snapshot(client: httpx.Client) -> Any:
    return (
        client.get("/v1/sessions/private/runs", headers=A).json(),
        client.get("/v1/sessions/private/state", headers=A).json(),
        client.get("/v1/sessions/private/interactions", headers=A).json(),
    )


def test_the_matrix_covers_every_route(world: Any) -> None:
    client, _ = world
    doc = client.get("/openapi.json").json()
    routes = {
        (method.upper(), path)
        for path, ops in doc["paths"].items()
        if path.startswith("/v1")
        for method in ops
    }
    assert routes == set(MATRIX)


def test_another_users_ids_answer_like_ids_that_do_not_exist(world: Any) -> None:
    client, ids = world
    before = snapshot(client)
    fresh = {
        "session_id": "private",  # bob's own "private": it does not exist for him either
        "command_id": "cmd-" + "0" * 32,
        "request_id": "call-nobody",
        "turn": "turn-nobody",
        "run_id": "cmd-x.1",
    }
    leaks = [ids["command_id"], ids["request_id"], ids["turn"], ids["run_id"], SECRET, "alice"]
    for method, path in MATRIX:
        got_status, got = call(client, method, path, ids, B)
        want_status, want = call(client, method, path, fresh, B)
        assert got_status == want_status, (method, path, got)
        assert got_status < 500
        if got_status >= 400:
            assert got["error"]["type"] == want["error"]["type"], (method, path)
        shown = json.dumps(got)
        for secret in leaks:
            if secret in path.format(**ids) or secret in str(MATRIX[(method, path)][0]):
                continue  # bob sent it himself: an echo of his own request, not a leak
            if secret == ids["turn"] and "resume" in path:
                continue
            assert secret not in shown, (method, path, secret)
    assert snapshot(client) == before  # nothing of alice's changed
    # and bob's own commands live in his own session, apart from alice's
    bobs = client.get("/v1/sessions/private/runs", headers=B).json()["runs"]
    assert bobs and all(r["command_id"] != ids["command_id"] for r in bobs)
