"""Two ``hookagent serve`` processes on one Redis (and one PostgreSQL), no balancer, the
clients alternating between them: every turn runs exactly once, in order per session; a
process killed mid-tool hands its sessions to the other after the lease, and the uncertain
tool rule applies (the killed command ends interrupted, the next one fails until an
operator reconciles)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hookagent.messages import new_id
from server_support import TOKENS, auth, sse_events

A = auth("alice")
HERE = Path(__file__).resolve().parent


def urls(backend: str, tag: str) -> tuple[str, str]:
    if backend == "redis":
        base = os.environ.get("HOOKAGENT_TEST_REDIS_LOG", "redis://127.0.0.1:6379/0")
        return f"{base}?prefix=srv-{tag}-log", f"{base}?prefix=srv-{tag}-inbox"
    base = os.environ.get(
        "HOOKAGENT_TEST_PG_LOG", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
    )
    return f"{base}?table_prefix=s{tag[:8]}_log_", f"{base}?table_prefix=s{tag[:8]}_inbox_"


class Replica:
    def __init__(self, name: str, log: str, inbox: str, tokens: Path) -> None:
        env = {
            **os.environ,
            "TEST_SESSION_LOG": log,
            "LEASE": "2",
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        }
        cmd = [
            sys.executable, "-c", "from hookagent_cli.main import main; raise SystemExit(main())",
            "serve", "--config", "server_support:scripted_config", "--inbox", inbox,
            "--port", "0", "--replica-id", name, "--tokens-file", str(tokens),
            "--owner-lease", "2", "--poll-interval", "0.1", "--log-level", "warning",
        ]  # fmt: skip
        self.name = name
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "listening on" in line, line
        self.url = line.rsplit(" ", 1)[1].strip()
        self.client = httpx.Client(base_url=self.url, timeout=30)
        deadline = time.monotonic() + 20
        while self.client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "not ready"
            time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(params=["redis", "postgresql"])
def replicas(request: Any, tmp_path: Path) -> Iterator[list[Replica]]:
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{u} {t}\n" for u, t in TOKENS.items()))
    log, inbox = urls(request.param, new_id()[:12])
    pair = [Replica("replica-a", log, inbox, tokens), Replica("replica-b", log, inbox, tokens)]
    try:
        yield pair
    finally:
        for r in pair:
            r.stop()


def wait_final(client: httpx.Client, sid: str, cid: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        view: dict[str, Any] = client.get(
            f"/v1/sessions/{sid}/runs/{cid}", params={"wait": 5}, headers=A
        ).json()
        if view["status"] not in ("queued", "starting", "running"):
            return view
        assert time.monotonic() < deadline, view


def log_events(client: httpx.Client, sid: str) -> list[dict[str, Any]]:
    with client.stream(
        "GET", f"/v1/sessions/{sid}/events", params={"follow": "false"}, headers=A
    ) as resp:
        return [e["data"] for e in sse_events(resp)]


def test_alternating_clients_every_turn_runs_once_in_order(replicas: list[Replica]) -> None:
    sessions, turns = ["s1", "s2", "s3"], 6
    sent: dict[str, list[str]] = {s: [] for s in sessions}
    for n in range(turns):
        for i, sid in enumerate(sessions):
            here, there = replicas[(n + i) % 2], replicas[(n + i + 1) % 2]
            body = {"input": f"{sid} turn {n}", "idempotency_key": f"{sid}-{n}"}
            one = here.client.post(f"/v1/sessions/{sid}/runs", json=body, headers=A).json()
            two = there.client.post(f"/v1/sessions/{sid}/runs", json=body, headers=A).json()
            assert one["command_id"] == two["command_id"]  # a resend to the other replica
            sent[sid].append(one["command_id"])
    for i, sid in enumerate(sessions):
        views = [wait_final(replicas[(i + k) % 2].client, sid, c) for k, c in enumerate(sent[sid])]
        assert [v["status"] for v in views] == ["completed"] * turns
        assert [v["reply_text"] for v in views] == [f"echo: {sid} turn {n}" for n in range(turns)]
        starts = [v["started_at"] for v in views]
        assert starts == sorted(starts)  # in inbox order
        events = log_events(replicas[i % 2].client, sid)
        started = [e["run_id"] for e in events if e["type"] == "run/started"]
        assert started == [v["run_id"] for v in views]  # each exactly once, in order
        state = (
            replicas[(i + 1) % 2]
            .client.get(f"/v1/sessions/{sid}/state", params={"section": "context"}, headers=A)
            .json()
        )
        users = [
            m["content"][0]["text"] for m in state["sections"]["context"] if m["role"] == "user"
        ]
        assert users == [f"{sid} turn {n}" for n in range(turns)]
    runners = {v["replica_id"] for sid in sessions for v in replicas[0].client.get(
        f"/v1/sessions/{sid}/runs", headers=A).json()["runs"]}  # fmt: skip
    assert runners <= {"replica-a", "replica-b"}


def test_a_process_killed_mid_tool_hands_over_after_the_lease(replicas: list[Replica]) -> None:
    first = (
        replicas[0].client.post("/v1/sessions/k/runs", json={"input": "slow 60"}, headers=A).json()
    )
    deadline = time.monotonic() + 20
    while True:  # the tool is executing: its dispatch is durable in the log
        events = log_events(replicas[1].client, "k")
        if any(e["type"] == "tool/dispatch" for e in events):
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    view = replicas[1].client.get(f"/v1/sessions/k/runs/{first['command_id']}", headers=A).json()
    owner = next(r for r in replicas if r.name == view["replica_id"])
    survivor = next(r for r in replicas if r is not owner)
    owner.proc.kill()
    owner.proc.wait()
    t0 = time.monotonic()
    after = survivor.client.post("/v1/sessions/k/runs", json={"input": "and then"}, headers=A)
    killed = wait_final(survivor.client, "k", first["command_id"])
    took = time.monotonic() - t0
    assert killed["status"] == "interrupted" and killed["error_type"] == "ReplicaLost", killed
    assert killed["replica_id"] == owner.name  # its claim; nobody ran it again
    assert 1.0 < took < 20  # after the lease (2 s, renewed every 0.67 s), not before
    started = [e for e in log_events(survivor.client, "k") if e["type"] == "run/started"]
    assert started[0]["run_id"] == killed["run_id"]  # the killed run was not re-run
    nxt = wait_final(survivor.client, "k", after.json()["command_id"])
    assert nxt["status"] == "failed" and nxt["error_type"] == "UncertainToolCalls", nxt
