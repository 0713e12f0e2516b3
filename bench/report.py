"""Markdown tables for bench/README.md from the result JSON.

python bench/report.py ours [bench/results]            # workload.py results, one per store
python bench/report.py peers bench/results/peers-XXXX  # a run_peers.sh sitting
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ORDER = ["memory", "file", "redis", "postgres", "sqlite"]
PEER_NAMES = {
    "hookagent": "hookagent",
    "langgraph": "LangGraph",
    "openai_agents": "OpenAI Agents SDK",
    "agentscope": "AgentScope",
    "adk": "Google ADK",
}


def f(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}"


def ours(root: Path) -> None:
    rows = []
    for p in sorted(root.glob("*.json")):
        if p.name.endswith(".w1times.json") or p.name.startswith("peers"):
            continue
        d = json.loads(p.read_text())
        if "label" in d and d["label"] in ORDER:
            rows.append(d)
    rows.sort(key=lambda d: ORDER.index(d["label"]))
    print("### W1 / W0 (wall ms per call; client CPU ms per call in brackets)\n")
    print(
        "| store | calls | 1-20 | 491-510 | 981-1000 | last/first | total s | client CPU s "
        "| stored MB | stored / encoded msgs | stored / text |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in rows:
        w = d.get("w1")
        if not w:
            continue
        c = w.get("cpu") or {k: {"median_ms": None} for k in ("w_first", "w_mid", "w_last")}
        cells = [
            f"{f(w[k]['median_ms'])} ({f(c[k]['median_ms'])})"
            for k in ("w_first", "w_mid", "w_last")
        ]
        print(
            f"| {d['label']} | {w['calls_done']} | {' | '.join(cells)} | {f(w['last_over_first'])} "
            f"| {f(w['total_s'])} | {f(w['client_cpu_s'])} | {w['stored']['bytes'] / 1e6:.2f} "
            f"| {f(w['stored_over_encoded'])} | {f(w['stored_over_text'])} |"
        )
    print("\n### W2 (200 sessions x 5 calls, 50 in flight), W3 (cold resume), build\n")
    print(
        "| store | W2 calls/s | p50 ms | p95 ms | client CPU s / wall s | errors "
        "| W3 load+call ms (median of 3) | W3 CPU ms | all reps | import s | store open ms "
        "| build+close µs | async with µs |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d in rows:
        w2, w3, b = d.get("w2", {}), d.get("w3", {}), d.get("build", {})
        reps = ", ".join(f(r.get("load_and_call_ms"), 0) for r in w3.get("reps", []))
        print(
            f"| {d['label']} | {f(w2.get('calls_per_s'), 0)} | {f(w2.get('lat_p50_ms'), 1)} "
            f"| {f(w2.get('lat_p95_ms'), 1)} | {f(w2.get('client_cpu_s'))} / {f(w2.get('wall_s'))} "
            f"| {w2.get('errors', '-')} | {f(w3.get('load_and_call_ms_median'), 1)} "
            f"| {f(w3.get('load_and_call_cpu_ms_median'), 1)} | {reps or '-'} "
            f"| {f(w3.get('import_s_median'))} | {f(w3.get('open_ms_median'), 1)} "
            f"| {f(b.get('build_close_us'), 1)} | {f(b.get('async_with_us'), 1)} |"
        )


def _med(ts: list[float], a: int, b: int) -> float | None:
    part = ts[a - 1 : b]
    return statistics.median(part) if len(part) == b - a + 1 else None


def peers(root: Path) -> None:
    rows = []
    for p in sorted(root.glob("*__*.json")):
        if p.name.endswith(".w1times.json"):
            continue
        d = json.loads(p.read_text())
        t = root / p.name.replace(".json", ".w1times.json")
        d["_times"] = json.loads(t.read_text()) if t.exists() else []
        rows.append(d)
    stores = ["none", "mem", "file", "redis", "postgres", "sqlite"]
    rows.sort(
        key=lambda d: (
            list(PEER_NAMES).index(d["peer"]) if d["peer"] in PEER_NAMES else 99,
            stores.index(d["store"]) if d["store"] in stores else 99,
        )
    )
    n = min((len(d["_times"]) for d in rows if d["_times"]), default=0)
    last = (n - 19, n)
    mid = (n // 2 - 9, n // 2 + 10)
    wins = [(1, 20), mid, last]
    print(f"### W1 at common windows (every row reached call {n}); ms per call\n")
    hdr = " | ".join(f"calls {a}-{b}" for a, b in wins)
    print(
        f"| peer + store | {hdr} | last/first | total s, calls 1-{n} | client CPU s | stored MB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for d in rows:
        ts = d["_times"]
        meds = [_med(ts, a, b) for a, b in wins]
        ratio = meds[2] / meds[0] if meds[0] and meds[2] else None
        w1 = d.get("w1", {})
        size = w1.get("stored", {}).get("bytes")
        print(
            f"| {PEER_NAMES.get(d['peer'], d['peer'])} + {d['store_label']} "
            f"| {' | '.join(f(m) for m in meds)} | {f(ratio)} | {f(sum(ts[:n]) / 1000)} "
            f"| {f(w1.get('client_cpu_s'))} | {f(size / 1e6 if size else None)} |"
        )
    ours_rows = [d for d in rows if d["peer"] == "hookagent"]
    print(f"\n### Ratio: peer row / hookagent row at calls {last[0]}-{last[1]} (x slower)\n")
    print("| peer + store | " + " | ".join(f"vs hookagent+{d['store']}" for d in ours_rows) + " |")
    print("|---|" + "---|" * len(ours_rows))
    for d in rows:
        if d["peer"] == "hookagent":
            continue
        m = _med(d["_times"], *last)
        cells = []
        for o in ours_rows:
            mo = _med(o["_times"], *last)
            cells.append(f(m / mo, 1) if m and mo else "-")
        name = f"{PEER_NAMES.get(d['peer'], d['peer'])} + {d['store_label']}"
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n### W2 and W3 in the same sitting\n")
    print("| peer + store | W2 calls/s | p50 ms | p95 ms | errors | W3 load+call ms | import s |")
    print("|---|---|---|---|---|---|---|")
    for d in rows:
        w2, w3 = d.get("w2", {}), d.get("w3", {})
        print(
            f"| {PEER_NAMES.get(d['peer'], d['peer'])} + {d['store_label']} "
            f"| {f(w2.get('calls_per_s'), 1)} | {f(w2.get('lat_p50_ms'), 1)} "
            f"| {f(w2.get('lat_p95_ms'), 1)} | {w2.get('errors', '-')} "
            f"| {f(w3.get('load_and_call_ms_median'), 1)} | {f(w3.get('import_s_median'))} |"
        )


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ours"
    root = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE / "results"
    (ours if mode == "ours" else peers)(root)


if __name__ == "__main__":
    main()
