"""Before/after for the SQL store, side by side: W1, W2 and W3 (``workload.py``) run
alternately with an older copy of the plugin and with the working tree's, same kernel.

    git archive <commit> src/plugins/store-sql | tar -x -C /tmp/hasql/old
    python bench/probe_sql_ab.py --old /tmp/hasql/old/src/plugins/store-sql --rounds 2

The older copy is imported first via PYTHONPATH (the installed plugin is editable). Each
version writes its own tables / file (table prefix ``hasqla_``/``hasqlb_``, files
``/tmp/hasql/a.db``/``b.db``). Prints per store and version the medians over the rounds:
W1 windows (wall and client CPU ms per call), W2 calls/s and client CPU ms per call, W3
load + call (wall and CPU ms), store open ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STORES = {
    "postgres": "postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=hasql{v}_",
    "sqlite": "sqlite+aiosqlite:////tmp/hasql/{v}.db",
}


def run(url: str, old: str | None, out: Path) -> dict[str, Any]:
    env = dict(os.environ)
    if old:
        env["PYTHONPATH"] = old + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(HERE / "workload.py"), "--store", url, "--w3", "--skip", "build"]
    cmd += ["--json", str(out)]
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=900)
    return json.loads(out.read_text())


def row(res: list[dict[str, Any]]) -> dict[str, Any]:
    def med(get: Any) -> float:
        vals = [get(r) for r in res]
        return round(statistics.median(v for v in vals if v is not None), 2)

    w1 = lambda r, k, w: r["w1"][k][w]["median_ms"] if k == "cpu" else r["w1"][w]["median_ms"]  # noqa: E731
    return {
        "w1_first_ms": med(lambda r: w1(r, "wall", "w_first")),
        "w1_first_cpu": med(lambda r: r["w1"]["cpu"]["w_first"]["median_ms"]),
        "w1_last_ms": med(lambda r: w1(r, "wall", "w_last")),
        "w1_last_cpu": med(lambda r: r["w1"]["cpu"]["w_last"]["median_ms"]),
        "w2_calls_s": med(lambda r: r["w2"]["calls_per_s"]),
        "w2_cpu_ms_call": med(lambda r: r["w2"]["client_cpu_s"] / r["w2"]["calls_ok"] * 1000),
        "w3_ms": med(lambda r: r["w3"]["load_and_call_ms_median"]),
        "w3_cpu_ms": med(lambda r: r["w3"].get("load_and_call_cpu_ms_median")),
        "open_ms": med(lambda r: r["w3"]["open_ms_median"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="path holding the older hookagent_store_sql")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stores", default="postgres,sqlite")
    ap.add_argument("--out", default="/tmp/hasql/ab")
    a = ap.parse_args()
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for store in a.stores.split(","):
        results[store] = {"old": [], "new": []}
        for i in range(a.rounds):
            for version, old in (("old", a.old), ("new", None)):
                url = STORES[store].format(v="a" if version == "old" else "b")
                res = run(url, old, outdir / f"{store}-{version}-{i}.json")
                results[store][version].append(res)
                print(store, version, i, json.dumps(row([res])), flush=True)
    print("medians over rounds, load average", os.getloadavg())
    for store, by in results.items():
        for version, res in by.items():
            print(store, version, json.dumps(row(res)))


if __name__ == "__main__":
    main()
