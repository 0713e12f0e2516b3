"""A/B of two checkouts on the standard workload, interleaved, one store at a time.

    python bench/ab.py --a /path/to/old/checkout --b . --reps 3 --out bench/results/ab.md
    python bench/ab.py --a . --a-path /tmp/old/src/plugins/store-sql --b . --stores sqlite

Each checkout runs with its own ``.venv`` (``scripts/dev.py setup`` made it), so each side
imports its own hookagent. For every store and repetition the two sides run back to back,
in alternating order (A then B, then B then A), so a load that rises or falls during the
sitting does not favour one side. Each row records the load average and the client's
CPU/wall; a CPU-bound row (memory, file) below 0.8 CPU/wall is marked, since then something
else took the CPU. Never asserts anything: it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=habench_ab_"
MARIADB = "mysql+aiomysql://root@127.0.0.1:3306/test?table_prefix=habench_ab_"
STORES = {
    "memory": "memory",
    "file": "file:///tmp/habench/ab-files",
    "redis": "redis://127.0.0.1:6379/15?prefix=habench-ab",
    "postgres": PG,
    "mariadb": MARIADB,
    "sqlite": "sqlite+aiosqlite:////tmp/habench/ab.db",
}
CPU_BOUND = {"memory", "file", "sqlite"}


def run_side(
    checkout: Path, store: str, w1_calls: int, w2_sessions: int, path: str | None = None
) -> dict[str, object]:
    py = checkout / ".venv" / "bin" / "python"
    env = dict(os.environ)
    if path:  # e.g. an older copy of one plugin, imported first (its install is editable)
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        target = out.name
    cmd = [
        str(py),
        str(checkout / "bench" / "workload.py"),
        "--store",
        store,
        "--w1-calls",
        str(w1_calls),
        "--w2-sessions",
        str(w2_sessions),
        "--skip",
        "build",
        "--json",
        target,
    ]
    subprocess.run(cmd, check=True, cwd=checkout, capture_output=True, timeout=900, env=env)
    data = json.loads(Path(target).read_text())
    os.unlink(target)
    w1, w2 = data["w1"], data["w2"]
    return {
        "w1_last_ms": w1["w_last"]["median_ms"],
        "w1_mean_ms": w1["mean_ms"],
        "w1_cpu_wall": round(w1["client_cpu_s"] / w1["total_s"], 2) if w1["total_s"] else None,
        "w2_calls_s": w2["calls_per_s"],
        "w2_cpu_wall": round(w2["client_cpu_s"] / w2["wall_s"], 2) if w2["wall_s"] else None,
        "w2_cpu_ms": round(w2["client_cpu_s"] / w2["calls_ok"] * 1000, 3)
        if w2["calls_ok"]
        else None,
        "load": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", type=Path, required=True, help="the old checkout")
    ap.add_argument("--b", type=Path, default=HERE.parent, help="the new checkout")
    ap.add_argument(
        "--a-path",
        help="prepended to PYTHONPATH for side A only: e.g. an older plugin copy "
        "(git archive <commit> src/plugins/store-sql) to A/B one plugin on the same kernel",
    )
    ap.add_argument("--stores", default=",".join(STORES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--w1-calls", type=int, default=500)
    ap.add_argument("--w2-sessions", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    Path("/tmp/habench").mkdir(exist_ok=True)
    rows: list[str] = [
        "| store | side | W1 ms/call (calls at the end, median of reps) | W1 mean ms | W2 calls/s |"
        " W2 client CPU ms/call | CPU/wall W1, W2 | load | B/A W1 | B/A W2 | B/A W2 CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in args.stores.split(","):
        store = STORES[name]
        got: dict[str, list[dict[str, object]]] = {"A": [], "B": []}
        for rep in range(args.reps):
            order = ("A", "B") if rep % 2 == 0 else ("B", "A")
            for side in order:
                checkout = args.a if side == "A" else args.b
                path = args.a_path if side == "A" else None
                got[side].append(run_side(checkout, store, args.w1_calls, args.w2_sessions, path))
                print(name, side, rep, got[side][-1], flush=True)

        def med(side: str, key: str, got: dict[str, list[dict[str, object]]] = got) -> float:
            return float(statistics.median(float(r[key]) for r in got[side]))  # type: ignore[arg-type]

        for side in ("A", "B"):
            cpu = f"{med(side, 'w1_cpu_wall'):.2f}, {med(side, 'w2_cpu_wall'):.2f}"
            if name in CPU_BOUND and med(side, "w1_cpu_wall") < 0.8:
                cpu += " (below 0.8: contended)"
            ratio_w1 = med("B", "w1_last_ms") / med("A", "w1_last_ms")
            ratio_w2 = med("B", "w2_calls_s") / med("A", "w2_calls_s")
            ratio_cpu = med("B", "w2_cpu_ms") / med("A", "w2_cpu_ms")
            rows.append(
                f"| {name} | {side} | {med(side, 'w1_last_ms'):.3f} | {med(side, 'w1_mean_ms'):.3f}"
                f" | {med(side, 'w2_calls_s'):.0f} | {med(side, 'w2_cpu_ms'):.3f} | {cpu}"
                f" | {med(side, 'load'):.2f} |"
                + (
                    f" {ratio_w1:.2f} | {ratio_w2:.2f} | {ratio_cpu:.2f} |"
                    if side == "B"
                    else " | | |"
                )
            )
    table = "\n".join(rows)
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
