"""One fair sitting: hookagent and every peer configuration, interleaved, with its own checks.

    bash bench/sitting.sh                    # the published sitting (about 25-30 min, 2 cores)
    SMOKE=1 bash bench/sitting.sh            # tiny counts, a few peers: checks the machinery

Order: one store at a time (memory, redis, postgres, sqlite and the file store). Within a
store every peer configuration runs back to back with a hookagent row on the same store, the
order alternating (hookagent then the peer, then the peer then hookagent), so a load that
rises or falls favours neither side; a peer's ratio is taken against its own neighbour row.
Then our own 1,000-call rows on that store (and the 10,000-call runs for memory and Redis),
W4 on Redis and PostgreSQL, the baselines, and W2/W3 beside a busy core.

Every row records the load average before and after and its CPU/wall (client CPU over wall
time, W1 and W2). In-memory and no-persistence rows must be CPU-bound: if one of them shows
a CPU/wall below 0.8, something else took the CPU and the sitting is marked INVALID in
``summary.md``. Everything goes to ``bench/results/sitting-<stamp>/``; ``sitting_report.py``
writes the summary and the pictures from it (and can be re-run on the folder).

Every server is the peers' harness's throwaway pair (PostgreSQL 127.0.0.1:55432, Redis
127.0.0.1:6390, started and stopped here), ours included. Paths come from the environment:
``PEERS_HARNESS`` (default ``<repo>/../shared/bench/peers``) and ``PEERS_VENV`` (default
``<repo>/../peers-venv``; ``bench/README.md`` says how to make it). The harness copy in the
temp dir is removed at the end (``KEEP_WORK=1`` keeps it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from sitting_plan import Row, build_plan, env_int  # noqa: E402

PY = sys.executable  # sitting.sh runs this file with the peers venv's python


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def utc() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())


def snapshot(out: Path, stamp: str) -> str:
    """Install a ``git archive`` of HEAD's src/ (other people's uncommitted edits stay out)."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (out / "commit.txt").write_text(commit + "\n")
    if os.environ.get("SNAPSHOT", "1") != "1":
        print(f"SNAPSHOT=0: measuring whatever hookagent the venv has (HEAD is {commit[:7]})")
        return commit + " (no snapshot: the venv's install)"
    snap = Path(tempfile.gettempdir()) / f"habench-snapshot-{stamp}"
    snap.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(snap)], input=archive, check=True)
    dists = [snap / "src" / "core"]
    dists += sorted((snap / "src" / "plugins").glob("store-*"))
    dists += [snap / "src" / "plugins" / "session-log"]
    cmd = [PY, "-m", "pip", "install", "-q", "--no-deps"]
    for d in dists:
        cmd += ["-e", str(d)]
    subprocess.run(cmd, check=True, capture_output=True)
    print(f"snapshot of {commit[:7]} in {snap}, installed (editable, no deps) into {PY}")
    return commit


def harness_copy(harness: Path) -> Path:
    """A temp copy of the peers' harness (unedited) with our adapter and strings beside it."""
    work = Path(tempfile.mkdtemp(prefix="habench-sitting."))
    shutil.copytree(harness, work, dirs_exist_ok=True)
    # the throwaway Postgres runs as user postgres under it; copytree gave it the shared
    # folder's read-only mode
    work.chmod(0o755)
    for p in work.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    for name in ("peer_hookagent.py", "run_peers.py", "bench_agent.py", "bench_texts.py"):
        shutil.copy(HERE / name, work / name)
    shutil.rmtree(work / "results", ignore_errors=True)
    (work / "results").mkdir()
    (work / "data").mkdir(exist_ok=True)
    return work


def result_cpu_wall(path: Path) -> tuple[float | None, float | None, dict[str, Any]]:
    """W1 and W2 client CPU / wall from a result JSON (harness's or workload.py's)."""
    if not path.exists():
        return None, None, {}
    d = json.loads(path.read_text())
    w1, w2 = d.get("w1") or {}, d.get("w2") or {}
    c1 = round(w1["client_cpu_s"] / w1["total_s"], 2) if w1.get("total_s") else None
    c2 = round(w2["client_cpu_s"] / w2["wall_s"], 2) if w2.get("wall_s") else None
    return c1, c2, d


def run_row(row: Row, work: Path, out: Path, env: dict[str, str], i: int, total: int) -> None:
    log = out / "logs" / f"{i:02d}-{row.key}.log"
    row_env = {**env, **row.env}
    load0, row.started = loadavg(), utc()
    print(f"[{i:02d}/{total}] {utc()[11:]} load {load0[0]:.2f}  {row.name}", flush=True)
    t0 = time.perf_counter()
    with log.open("w") as fh:
        try:
            p = subprocess.run(
                row.cmd(PY, work, out),
                cwd=work if row.kind == "harness" else REPO,
                env=row_env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=row.timeout,
            )
            row.rc = p.returncode
        except subprocess.TimeoutExpired:  # the row failed; the sitting goes on
            fh.write(f"\n!! killed after {row.timeout} s\n")
            row.rc = -9
    row.wall_s = round(time.perf_counter() - t0, 1)
    row.load_start, row.load_end = load0, loadavg()
    if row.kind == "harness" and row.result:  # keep the harness's files as each row ends
        for suffix in (".json", ".w1times.json"):
            f = work / "results" / (row.result_name + suffix)
            if f.exists():
                shutil.copy(f, out / "peers" / f.name)
    if row.result:
        row.w1_cpu_wall, row.w2_cpu_wall, _ = result_cpu_wall(out / row.result)
    flag = "" if row.rc == 0 else f"  !! rc={row.rc}, see {log.relative_to(out)}"
    cw = f"CPU/wall {row.w1_cpu_wall}, {row.w2_cpu_wall}" if row.result else ""
    print(f"        {row.wall_s:6.1f} s  {cw}{flag}", flush=True)


def main() -> int:
    harness = Path(os.environ.get("PEERS_HARNESS", REPO.parent / "shared" / "bench" / "peers"))
    if not (harness / "driver.py").exists():
        raise SystemExit(f"no peers' harness at {harness}: set PEERS_HARNESS")
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
    out = Path(os.environ.get("OUT", HERE / "results" / f"sitting-{stamp}"))
    for sub in ("logs", "peers", "ours"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"started": utc(), "loadavg_start": loadavg(), "python": PY}
    meta["commit"] = snapshot(out, stamp)
    work = harness_copy(harness)
    env = dict(os.environ)
    env.update(TMPDIR=str(work), BENCH_DATA_DIR=str(work / "data"), PYTHONUNBUFFERED="1")
    plan = build_plan(work)
    meta["counts"] = {
        k: env_int(k)
        for k in ("PEERS_W1", "OURS_W1", "LONG_W1", "W2_SESSIONS", "W3_REPS", "W1_BUDGET")
    }
    meta["plan"] = [r.name for r in plan]
    print(f"harness copy {work}; results {out}; {len(plan)} rows")
    subprocess.run(["bash", "servers.sh", "start"], cwd=work, env=env, check=True)
    try:
        for i, row in enumerate(plan, 1):
            if row.kind == "burner_on":
                row.proc = subprocess.Popen([PY, "-c", "while True: pass"])
                continue
            if row.kind == "burner_off":
                for r in plan:
                    if r.proc is not None:
                        r.proc.kill()
                        r.proc.wait()
                continue
            run_row(row, work, out, env, i, len(plan))
            (out / "rows.json").write_text(json.dumps([r.record() for r in plan], indent=1))
        subprocess.run(
            [PY, "report.py"], cwd=work, env=env, stdout=(out / "peers" / "tables.md").open("w")
        )
    finally:
        for r in plan:
            if r.proc is not None and r.proc.poll() is None:
                r.proc.kill()
        subprocess.run(["bash", "servers.sh", "stop"], cwd=work, env=env, capture_output=True)
        shutil.copytree(work / "results", out / "peers", dirs_exist_ok=True)
        if os.environ.get("KEEP_WORK", "0") != "1":  # its throwaway Postgres data dir is large
            shutil.rmtree(work, ignore_errors=True)
    meta.update(ended=utc(), loadavg_end=loadavg(), harness_copy=str(work))
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    (out / "rows.json").write_text(json.dumps([r.record() for r in plan], indent=1))
    rc = subprocess.run([PY, str(HERE / "sitting_report.py"), str(out)]).returncode
    print(f"summary: {out / 'summary.md'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
