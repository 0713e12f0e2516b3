"""Real processes on one session's log (``helpers/logworker.py``): two racing writers that
fence each other, and writers SIGKILLed mid-commit, on local disk and on the local fsspec
filesystem in multi-writer mode."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hookagent.sessionlog import LogEvent
from hookagent_store_jsonfile import FsspecJsonFileSessionLog, JsonFileSessionLog
from hookagent_store_jsonfile.layout import id_parts
from hookagent_store_jsonfile.logfiles import (
    COMMIT_MAGIC,
    LOG_DIR,
    SLOT,
    commit_first,
    decode_head_record,
)

pytestmark = pytest.mark.anyio
WORKER = Path(__file__).parent / "helpers" / "logworker.py"
USER, SESSION = "user/1", "race session"
BACKENDS = ["local", "fsspec"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def open_log(backend: str, root: Path) -> Any:
    if backend == "local":
        return JsonFileSessionLog(root)
    return FsspecJsonFileSessionLog(str(root), writers="multi", fs=fsspec.filesystem("file"))


def spawn(backend: str, root: Path, name: str, mode: str, count: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), backend, str(root), name, mode, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


async def contiguous(log: Any) -> list[LogEvent]:
    head = await log.head(USER, SESSION)
    events = await log.read_after(USER, SESSION, 0)
    assert [e.seq for e in events] == list(range(1, head.seq + 1))
    return events


@pytest.mark.parametrize("backend", BACKENDS)
async def test_two_processes_racing_fence_each_other(backend: str, tmp_path: Path) -> None:
    """Each round re-acquires as the same owner (fencing the other process's writer): the
    fenced side's commits are refused, every acknowledged commit is in the log at the seqs
    it was told, nothing refused is, and the log is contiguous."""
    root = tmp_path / "root"
    procs = [spawn(backend, root, name, "race", 40) for name in ("p1", "p2")]
    for p in procs:
        assert p.stdout is not None and "ready" in json.loads(p.stdout.readline())
    (tmp_path / "go").touch()  # both race from here
    reports: list[dict[str, Any]] = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        reports += lines(out)
    ok = [r for r in reports if "ok" in r]
    refused = {r.get("fenced") or r.get("stale") for r in reports if "ok" not in r}
    # How many commits get through depends on how the two processes interleave (13 of 80
    # rounds in one CI run under load): the test needs some of each, not a count.
    assert ok and refused, (len(ok), len(refused))
    assert any("fenced" in r for r in reports)
    log = open_log(backend, root)
    events = await contiguous(log)
    by_batch: dict[str, list[int]] = {}
    for e in events:
        by_batch.setdefault(e.payload["b"], []).append(e.seq)
    assert len(events) == 2 * len(ok)  # every event is an acknowledged commit's
    for r in ok:
        assert by_batch[r["batch"]] == list(range(r["ok"][0], r["ok"][1] + 1)), r
    assert not refused & set(by_batch)
    await log.aclose()


def session_dir(root: Path) -> Path:
    return root / LOG_DIR / Path(*id_parts(USER), *id_parts(SESSION))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_killed_between_commit_and_head(backend: str, tmp_path: Path) -> None:
    """SIGKILL after the commit bytes are durable and before the head moves: the head is
    unmoved, the orphan is on disk but invisible, and the next commit replaces it."""
    root = tmp_path / "root"
    p = spawn(backend, root, "crash", "stall")
    assert p.stdout is not None
    first = json.loads(p.stdout.readline())
    assert first["ok"] == [1, 1]
    assert json.loads(p.stdout.readline()) == {"between": "stall"}
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    sd = session_dir(root)
    if backend == "local":  # the orphan: a record past the head's end (format 2)
        raw = (sd / "head").read_bytes()
        slots = [decode_head_record(raw[:SLOT]), decode_head_record(raw[SLOT : 2 * SLOT])]
        doc = max((d for d in slots if d), key=lambda d: int(d["n"]))
        assert raw[int(doc["end"]) :].startswith(COMMIT_MAGIC)
    else:
        assert any(n.startswith("c0000000000000002.") for n in os.listdir(sd / "c" / "b0000000000"))
    log = open_log(backend, root)
    head = await log.head(USER, SESSION)
    assert (head.seq, head.commit_id, head.owner) == (1, "crash-first", "crash")
    assert [e.payload["b"] for e in await log.read_after(USER, SESSION, 0)] == ["first"]
    assert await log.read_after(USER, SESSION, 1) == []
    w = await log.acquire(USER, SESSION, "crash", 60)  # its owner's restart takes over
    again = [LogEvent("acme/crash", {"b": "after"})]
    r = await log.commit(w, "after", 1, again)
    assert (r.first_seq, r.last_seq) == (2, 2)
    assert [e.payload["b"] for e in await contiguous(log)] == ["first", "after"]
    stall = await log.commit(w, "stall", 2, [LogEvent("acme/crash", {"b": "stall"})])
    assert (stall.first_seq, stall.duplicate) == (3, False)  # the orphan's batch was no commit
    await log.aclose()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_killed_at_random_points_loses_no_acknowledged_commit(
    backend: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    rng = random.Random(7)
    acked: dict[str, tuple[int, int]] = {}
    rounds = 12
    for i in range(rounds):
        p = spawn(backend, root, f"k{i}", "loop")
        assert p.stdout is not None
        json.loads(p.stdout.readline())  # running (one commit acknowledged)
        time.sleep(rng.uniform(0.0, 0.15))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate(timeout=30)
        for line in out.split("\n")[:-1]:  # whole lines only (a kill may cut the last)
            r = json.loads(line)
            acked[r["batch"]] = (r["ok"][0], r["ok"][1])
        log = open_log(backend, root)
        events = await contiguous(log)
        seqs: dict[str, list[int]] = {}
        for e in events:
            seqs.setdefault(e.payload["b"], []).append(e.seq)
        for batch, (lo, hi) in acked.items():
            assert seqs.get(batch) == list(range(lo, hi + 1)), (batch, lo, hi)
        await log.release(await log.acquire(USER, SESSION, f"k{i}", 60))  # as its restart
        await log.aclose()
    assert len(acked) > rounds
    if backend == "local":  # at most one orphan record, right after the head's end
        assert [n for n in os.listdir(session_dir(root)) if commit_first(n)] == []
        raw = (session_dir(root) / "head").read_bytes()
        slots = [decode_head_record(raw[:SLOT]), decode_head_record(raw[SLOT : 2 * SLOT])]
        doc = max((d for d in slots if d), key=lambda d: int(d["n"]))
        assert raw[int(doc["end"]) :].count(COMMIT_MAGIC) <= 1
