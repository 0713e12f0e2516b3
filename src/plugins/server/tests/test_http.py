"""The API through uvicorn on loopback: submit, stream, interrupt, resume, respond,
idempotency, resumable streams, auth and errors (docs/service-api.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from server_support import EchoModel, auth, serving, sse_events, wait_status

A = auth("alice")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[httpx.Client, EchoModel]]:
    with serving() as (url, model), httpx.Client(base_url=url, timeout=30) as client:
        yield client, model


def submit(client: httpx.Client, sid: str, text: str, **extra: Any) -> dict[str, Any]:
    r = client.post(f"/v1/sessions/{sid}/runs", json={"input": text, **extra}, headers=A)
    assert r.status_code == 202, r.text
    body: dict[str, Any] = r.json()
    return body


def final(client: httpx.Client, sid: str, cid: str) -> dict[str, Any]:
    r = client.get(f"/v1/sessions/{sid}/runs/{cid}", params={"wait": 20}, headers=A)
    assert r.status_code == 200
    body: dict[str, Any] = r.json()
    assert body["status"] not in ("queued", "starting", "running"), body
    return body


def test_health_readiness_and_the_openapi_document(server: Any) -> None:
    client, _ = server
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["replica_id"].startswith("replica-")
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert "/v1/sessions/{session_id}/runs/{command_id}/events" in doc["paths"]


def test_submit_then_the_run_stream_starts_with_run_started_and_ends_with_the_view(
    server: Any,
) -> None:
    client, _ = server
    view = submit(client, "stream-1", "hello there")
    assert view["status"] == "queued" and view["kind"] == "submit"
    cid = view["command_id"]
    with client.stream("GET", f"/v1/sessions/stream-1/runs/{cid}/events", headers=A) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(resp))
    first, last = events[0], events[-1]
    assert first["event"] == "SESSION_RUN_STARTED"
    assert first["data"]["run_id"] == f"{cid}.1" and first["data"]["turn_id"]
    assert int(first["id"]) == first["data"]["seq"]
    assert last["event"] == "SESSION_TASK_FINAL" and last["id"] is None
    assert last["data"]["status"] == "completed"
    assert last["data"]["reply_text"] == "echo: hello there"
    assert "SESSION_RUN_FINISHED" in [e["event"] for e in events]
    assert all(e["data"]["run_id"] == f"{cid}.1" for e in events[:-1])
    seqs = [int(e["id"]) for e in events[:-1]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_idempotent_submit_by_body_or_header_and_a_conflict(server: Any) -> None:
    client, model = server
    calls = model.calls
    one = submit(client, "idem", "once", idempotency_key="key-1")
    two = submit(client, "idem", "once", idempotency_key="key-1")
    assert one["command_id"] == two["command_id"] and one["seq"] == two["seq"]
    r = client.post(
        "/v1/sessions/idem/runs", json={"input": "once"}, headers={**A, "Idempotency-Key": "key-1"}
    )
    assert r.status_code == 202 and r.json()["command_id"] == one["command_id"]
    clash = client.post(
        "/v1/sessions/idem/runs", json={"input": "other", "idempotency_key": "key-1"}, headers=A
    )
    assert clash.status_code == 409
    assert clash.json()["error"]["type"] == "IdempotencyConflict"
    assert clash.json()["error"]["detail"] == {"command_id": one["command_id"]}
    differ = client.post(
        "/v1/sessions/idem/runs",
        json={"input": "once", "idempotency_key": "key-1"},
        headers={**A, "Idempotency-Key": "key-2"},
    )
    assert differ.status_code == 400 and differ.json()["error"]["type"] == "BadRequest"
    assert final(client, "idem", one["command_id"])["reply_text"] == "echo: once"
    runs = client.get("/v1/sessions/idem/runs", headers=A).json()["runs"]
    assert [r["command_id"] for r in runs] == [one["command_id"]]
    assert model.calls == calls + 1  # it ran once


def test_interrupt_a_running_run_then_resume_its_turn(server: Any) -> None:
    client, model = server
    model.release.clear()
    try:
        view = submit(client, "intr", "take your time")
        cid = view["command_id"]
        running = wait_status(
            client, f"/v1/sessions/intr/runs/{cid}", A, lambda v: v["status"] == "running"
        )
        r = client.post(f"/v1/sessions/intr/runs/{cid}/interrupt", headers=A)
        assert r.status_code == 202, r.text
        assert r.json()["kind"] == "interrupt"
        stop = final(client, "intr", r.json()["command_id"])
        assert stop["status"] == "completed" and stop["target_run_id"] == running["run_id"]
    finally:
        model.release.set()
    done = final(client, "intr", cid)
    assert done["status"] == "interrupted"
    again = client.post(f"/v1/sessions/intr/runs/{cid}/interrupt", headers=A)
    assert again.status_code == 409 and again.json()["error"]["type"] == "NotRunning"
    nothing = client.post("/v1/sessions/intr/interrupt", json={}, headers=A)
    assert nothing.status_code == 409 and nothing.json()["error"]["type"] == "NotRunning"
    r = client.post("/v1/sessions/intr/resume", json={"turn_id": done["turn_id"]}, headers=A)
    assert r.status_code == 202 and r.json()["kind"] == "resume"
    resumed = final(client, "intr", r.json()["command_id"])
    assert resumed["status"] == "completed" and resumed["turn_id"] == done["turn_id"]


def test_a_stale_interrupt_is_refused(server: Any) -> None:
    client, model = server
    model.release.clear()
    try:
        cid = submit(client, "stale", "slowly")["command_id"]
        wait_status(client, f"/v1/sessions/stale/runs/{cid}", A, lambda v: v["status"] == "running")
        r = client.post(
            "/v1/sessions/stale/interrupt", json={"expected_run_id": "cmd-x.1"}, headers=A
        )
        assert r.status_code == 409 and r.json()["error"]["type"] == "StaleRun"
    finally:
        model.release.set()
    assert final(client, "stale", cid)["status"] == "completed"


def test_cancel_withdraws_a_queued_run_and_interrupts_a_running_one(server: Any) -> None:
    client, model = server
    model.release.clear()
    try:
        first = submit(client, "cancel", "busy")["command_id"]
        wait_status(
            client, f"/v1/sessions/cancel/runs/{first}", A, lambda v: v["status"] == "running"
        )
        queued = submit(client, "cancel", "never")["command_id"]
        r = client.post(f"/v1/sessions/cancel/runs/{queued}/cancel", json={}, headers=A)
        assert r.status_code == 202, r.text
        assert r.json()["status"] == "rejected" and r.json()["error_type"] == "Cancelled"
        r = client.post(f"/v1/sessions/cancel/runs/{first}/cancel", json={}, headers=A)
        assert r.status_code == 202, r.text
        # the answer comes once the run was told to stop: its interrupt command has ended
        runs = client.get("/v1/sessions/cancel/runs", headers=A).json()["runs"]
        stops = [v for v in runs if v["kind"] == "interrupt"]
        assert [v["status"] for v in stops] == ["completed"], stops
    finally:
        model.release.set()
    assert final(client, "cancel", first)["status"] == "interrupted"
    ended = client.post(f"/v1/sessions/cancel/runs/{queued}/cancel", json={}, headers=A)
    assert ended.status_code == 409 and ended.json()["error"]["type"] == "CommandRejected"
    state = client.get("/v1/sessions/cancel/state?section=context", headers=A).json()
    assert "never" not in str(state["sections"]["context"])  # it never reached the history


def test_a_question_is_listed_and_answered(server: Any) -> None:
    client, _ = server
    cid = submit(client, "ask", "deploy prod")["command_id"]
    suspended = final(client, "ask", cid)
    assert suspended["status"] == "suspended"
    pending = client.get("/v1/sessions/ask/interactions", headers=A).json()["interactions"]
    assert len(pending) == 1 and pending[0]["tool"] == "deploy"
    assert pending[0]["kind"] == "confirm" and pending[0]["input"] == {"env": "prod"}
    rid = pending[0]["tool_use_id"]
    bad = client.post(
        f"/v1/sessions/ask/interactions/{rid}", json={"answer": {"kind": "maybe"}}, headers=A
    )
    assert bad.status_code == 422 and bad.json()["error"]["type"] == "RequestValidationError"
    r = client.post(
        f"/v1/sessions/ask/interactions/{rid}", json={"answer": {"kind": "approve"}}, headers=A
    )
    assert r.status_code == 202 and r.json()["kind"] == "respond"
    done = final(client, "ask", r.json()["command_id"])
    assert done["status"] == "completed" and done["reply_text"] == "done"
    assert client.get("/v1/sessions/ask/interactions", headers=A).json() == {"interactions": []}
    state = client.get("/v1/sessions/ask/state", params={"section": "context"}, headers=A).json()
    results = [
        b
        for m in state["sections"]["context"]
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results and "deployed to prod" in str(results[0])


def test_the_session_stream_resumes_after_last_event_id(server: Any) -> None:
    client, _ = server
    final(client, "resume-sse", submit(client, "resume-sse", "one")["command_id"])
    final(client, "resume-sse", submit(client, "resume-sse", "two")["command_id"])
    path = "/v1/sessions/resume-sse/events"
    with client.stream("GET", path, params={"follow": "false"}, headers=A) as resp:
        everything = list(sse_events(resp))
    assert [e["event"] for e in everything].count("SESSION_RUN_STARTED") == 2
    cut = everything[4]["id"]
    with client.stream(
        "GET", path, params={"follow": "false", "after": 1}, headers={**A, "Last-Event-ID": cut}
    ) as resp:
        rest = list(sse_events(resp))
    assert [e["id"] for e in rest] == [e["id"] for e in everything[5:]]
    bad = client.get(path, headers={**A, "Last-Event-ID": "abc"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "BadRequest"
    # a run stream resumed after its last log event sends only the final view
    cid = everything[-1]["data"]["run_id"].rsplit(".", 1)[0]
    with client.stream(
        "GET",
        f"/v1/sessions/resume-sse/runs/{cid}/events",
        headers={**A, "Last-Event-ID": everything[-1]["id"]},
    ) as resp:
        tail = list(sse_events(resp))
    assert [e["event"] for e in tail] == ["SESSION_TASK_FINAL"]


def test_sessions_list_summary_state_and_clear(server: Any) -> None:
    client, _ = server
    final(client, "cleared", submit(client, "cleared", "remember me")["command_id"])
    ids = [s["session_id"] for s in client.get("/v1/sessions", headers=A).json()["sessions"]]
    assert "cleared" in ids
    summary = client.get("/v1/sessions/cleared", headers=A).json()
    assert summary["messages"] == 2 and summary["current"] is None and summary["last_seq"] > 0
    r = client.get("/v1/sessions/cleared/state", params={"section": "nope"}, headers=A)
    assert r.status_code == 400 and r.json()["error"]["type"] == "UnknownSection"
    assert client.post("/v1/sessions/cleared/clear", headers=A).json() == {"cleared": True}
    assert client.get("/v1/sessions/cleared", headers=A).json()["messages"] == 0
    missing = client.get("/v1/sessions/never-was", headers=A)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "UnknownSession"


def test_authentication_and_bad_input_give_typed_errors(server: Any) -> None:
    client, _ = server
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token-0000000000"},
        {"Authorization": "Basic x"},
    ):
        r = client.get("/v1/me", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"]["type"] == "Unauthenticated"
    assert client.get("/v1/me", headers=A).json() == {"user_id": "alice"}
    cases = [
        ("POST", "/v1/sessions/s/runs", {"input": ""}, 422),
        ("POST", "/v1/sessions/s/runs", {"input": "x", "user_id": "bob"}, 422),
        ("POST", "/v1/sessions/bad%20id/runs", {"input": "x"}, 422),
        ("POST", "/v1/sessions/s/runs", "not json", 422),
        ("POST", "/v1/sessions/s/steer", {"input": "x"}, 409),
        ("GET", "/v1/sessions/s/runs/cmd-missing", None, 404),
        ("GET", "/v1/nowhere", None, 404),
        ("DELETE", "/v1/sessions/s/runs", None, 405),
    ]
    for method, path, body, status in cases:
        kw: dict[str, Any] = {"content": body} if isinstance(body, str) else {"json": body}
        r = client.request(method, path, headers=A, **kw)
        assert r.status_code == status, (method, path, r.text)
        assert set(r.json()["error"]) >= {"type", "message", "status"}
    big = client.post("/v1/sessions/s/runs", json={"input": "x" * (2 << 20)}, headers=A)
    assert big.status_code == 413 and big.json()["error"]["type"] == "PayloadTooLarge"
