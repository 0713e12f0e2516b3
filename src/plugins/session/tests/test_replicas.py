"""Two service replicas (processes) on one Redis, one PostgreSQL and one directory (the file
log): every command runs exactly once, in order per session; a replica killed mid-run hands
its sessions over."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hookagent import AgentConfig
from hookagent.messages import new_id
from hookagent.plugins import create_plugin_manager
from hookagent.sessionlog import collect_session_logs
from hookagent_session import SessionHost, TaskView
from hookagent_session_log import SessionLogAdmin
from session_support import GatedModel

HOST = Path(__file__).with_name("host_process.py")
PG = os.environ.get("HOOKAGENT_TEST_PG_LOG", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("HOOKAGENT_TEST_REDIS_LOG", "redis://127.0.0.1:6379/0")
BACKENDS: dict[str, dict[str, Any]] = {
    "redis": {
        "log": f"{REDIS}?prefix=hasess-log",
        "inbox": f"{REDIS}?prefix=hasess-inbox",
        "inbox_options": {},
    },
    "postgresql": {"log": PG, "inbox": PG, "inbox_options": {"table_prefix": "hasess_inbox_"}},
}
if "file" in collect_session_logs(create_plugin_manager()):  # the file log, once it is merged
    BACKENDS["file"] = {
        "log": "file://{tmp}/log",
        "inbox": "file://{tmp}/inbox",
        "inbox_options": {},
    }
LEASE = 2.0


class Replica:
    """A host process; its stdout lines are collected by a thread."""

    def __init__(self, spec: dict[str, Any], stderr: Path) -> None:
        self.replica = spec["replica"]
        self._err = stderr.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(HOST), orjson.dumps(spec).decode()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.expect("READY", 60)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def _drain(self) -> None:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return

    def expect(self, prefix: str | tuple[str, ...], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            for i, line in enumerate(self.seen):
                if line.startswith(prefix):
                    return self.seen.pop(i)
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"{self.replica}: no {prefix!r} line; saw {self.seen}")
            try:
                self.seen.append(self.lines.get(timeout=min(left, 0.1)))
            except queue.Empty:
                pass

    def has(self, prefix: str) -> bool:
        self._drain()
        return any(line.startswith(prefix) for line in self.seen)

    def submit(self, session: str, key: str, text: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"SUBMIT {session} {key} {text}\n")
        self.proc.stdin.flush()
        line = self.expect(("OK ", "ERR"), 30)
        assert line.startswith("OK "), line
        return line[3:]

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


@pytest.fixture(params=sorted(BACKENDS))
def cluster(request: Any, tmp_path: Path) -> Any:
    backend = {
        k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v
        for k, v in BACKENDS[request.param].items()
    }
    user = f"u-{new_id()}"
    effects = tmp_path / "effects"
    replicas: list[Replica] = []

    def start(name: str) -> Replica:
        spec = {**backend, "replica": name, "user": user, "effects": str(effects), "lease": LEASE}
        replica = Replica(spec, tmp_path / f"{name}.err")
        replicas.append(replica)
        return replica

    config = AgentConfig(model=GatedModel(), session_log=backend["log"])
    client = SessionHost(
        config,
        inbox=backend["inbox"],
        inbox_options=backend["inbox_options"],
        dispatch=False,
        poll_interval=0.05,
    )
    with client:
        yield {"start": start, "client": client, "user": user, "effects": effects}
        for r in replicas:
            r.close()
    for r in replicas:
        err = (tmp_path / f"{r.replica}.err").read_text()
        assert "Traceback" not in err, f"{r.replica} logged an error:\n{err}"


def effects_of(path: Path) -> list[tuple[str, str, str]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(line.split(" ", 2)) for line in lines]  # type: ignore[misc]


def wait_all(
    client: SessionHost, user: str, sessions: list[str], timeout: float
) -> dict[str, list[TaskView]]:
    deadline = time.monotonic() + timeout
    while True:
        views = {s: client.session(user, s).tasks_sync() for s in sessions}
        if all(v.done for vs in views.values() for v in vs):
            return views
        if time.monotonic() > deadline:
            raise AssertionError(f"not all commands ended: {views}")
        time.sleep(0.1)


def test_two_replicas_run_every_command_once_in_order(cluster: dict[str, Any]) -> None:
    a, b = cluster["start"]("ra"), cluster["start"]("rb")
    client, user = cluster["client"], cluster["user"]
    sessions = ["s0", "s1", "s2"]
    sent: dict[str, list[str]] = {s: [] for s in sessions}
    for i in range(6):
        for j, s in enumerate(sessions):
            text = f"{s} message {i}"
            cid = (a, b)[(i + j) % 2].submit(s, f"{s}-{i}", text)
            if i == 0:  # a resent request through the other replica: the same command
                assert (b, a)[(i + j) % 2].submit(s, f"{s}-{i}", text) == cid
            sent[s].append(text)
    views = wait_all(client, user, sessions, 90)
    effects = effects_of(cluster["effects"])
    counts = Counter((s, t) for _, s, t in effects)
    for s in sessions:
        assert [v.status for v in views[s]] == ["completed"] * 6, views[s]
        assert [v.reply_text for v in views[s]] == [f"done: {t}" for t in sent[s]]
        assert [t for _, s2, t in effects if s2 == s] == sent[s]  # in order
        assert all(counts[(s, t)] == 1 for t in sent[s])  # exactly once
        log_runs = _started_runs(client, user, s)
        assert log_runs == [v.run_id for v in views[s]]
    assert {r for r, _, _ in effects} <= {"ra", "rb"}


def _started_runs(client: SessionHost, user: str, session: str) -> list[str | None]:
    async def read() -> list[str | None]:
        return [
            e.run_id
            async for e in client.session(user, session).events(follow=False)
            if e.type == "run/started"
        ]

    return client._sync(read)


def test_a_killed_replica_hands_its_sessions_over(cluster: dict[str, Any]) -> None:
    a, b = cluster["start"]("ra"), cluster["start"]("rb")
    client, user = cluster["client"], cluster["user"]
    slow = a.submit("k0", "slow", "k0 SLOW job")
    after = [b.submit("k0", "after-1", "k0 after 1"), a.submit("k0", "after-2", "k0 after 2")]
    other = a.submit("k1", "k1-0", "k1 message 0")
    deadline = time.monotonic() + 30
    while not (a.has("AT SLOW k0") or b.has("AT SLOW k0")):
        assert time.monotonic() < deadline, "the slow command never started"
        time.sleep(0.05)
    victim, survivor = (a, b) if a.has("AT SLOW k0") else (b, a)
    assert client.session(user, "k1").wait_sync(other, timeout=30).status == "completed"
    assert client.session(user, "k0").task_sync(slow).status == "running"
    killed_at = time.monotonic()
    victim.kill()
    more = survivor.submit("k1", "k1-1", "k1 message 1")
    views = wait_all(client, user, ["k0", "k1"], 60)
    handed_over = time.monotonic() - killed_at
    k0 = {v.command_id: v for v in views["k0"]}
    assert k0[slow].status == "interrupted" and k0[slow].error_type == "ReplicaLost"
    for cid in after:
        assert k0[cid].status == "completed" and k0[cid].replica_id == survivor.replica
    assert {v.command_id: v.status for v in views["k1"]} == {other: "completed", more: "completed"}
    effects = effects_of(cluster["effects"])
    counts = Counter(t for _, _, t in effects)
    assert counts["k0 SLOW job"] == 1  # the killed command's input is not re-sent
    assert counts["k0 after 1"] == counts["k0 after 2"] == 1
    assert handed_over >= LEASE * 0.5  # it waited for the leases, not less
    # the session goes on with the survivor
    last = survivor.submit("k0", "later", "k0 later")
    assert client.session(user, "k0").wait_sync(last, timeout=30).status == "completed"


def test_a_replica_killed_mid_tool_leaves_the_session_uncertain_until_reconciled(
    cluster: dict[str, Any],
) -> None:
    a, b = cluster["start"]("ra"), cluster["start"]("rb")
    client, user = cluster["client"], cluster["user"]
    risky = a.submit("t0", "risky", "t0 TOOLCALL pay")
    deadline = time.monotonic() + 30
    while not (a.has("AT TOOL t0") or b.has("AT TOOL t0")):
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.05)
    victim, survivor = (a, b) if a.has("AT TOOL t0") else (b, a)
    queued = survivor.submit("t0", "next", "t0 next")
    victim.kill()
    session = client.session(user, "t0")
    assert session.wait_sync(risky, timeout=30).status == "interrupted"
    refused = session.wait_sync(queued, timeout=30)
    assert refused.status == "failed" and refused.error_type == "UncertainToolCalls"
    assert "reconcile" in (refused.error or "")

    async def reconcile() -> None:
        log = await client.agent.kernel.store()
        admin = SessionLogAdmin(await log.log())  # type: ignore[attr-defined]
        [use] = await admin.uncertain(user, "t0")
        await admin.reconcile(user, "t0", {use.id: "error"}, reason="the test killed it")

    client._sync(reconcile)
    later = survivor.submit("t0", "later", "t0 later")
    assert session.wait_sync(later, timeout=30).status == "completed"
    assert Counter(t for _, _, t in effects_of(cluster["effects"]))["t0 TOOLCALL pay"] == 1
