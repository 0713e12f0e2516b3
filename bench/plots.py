"""The sitting's pictures (matplotlib, from the bench venv; not a project dependency).

``draw(out, rows, n)`` writes into the sitting folder and returns the file names:

* ``w1-<store>.png``: per-call wall time against call number, log scale, hookagent (the
  per-call median of its rows on that store in the sitting) and every peer configuration
  of the store; a running median of 5 calls smooths scheduler spikes;
* ``w1-long.png``: our 10,000-call runs (running median of 51);
* ``w2.png``, ``w3.png``: W2 calls/s and W3 load + call ms per row, log scale;
* ``w4.png``: W4 calls/s by number of processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import sitting_rules as R
from sitting_report import label

OURS_COLOURS = {"mem": "#d62728", "file": "#ff7f0e", "redis": "#d62728", "postgres": "#d62728"}
OURS_COLOURS["sqlite"] = "#d62728"
TITLES = {
    "memory": "In memory / no persistence",
    "redis": "Redis",
    "postgres": "PostgreSQL",
    "sqlite": "Local disk: SQLite (peers, ours) and our file store",
}


def _w1_store(out: Path, rows: list[dict[str, Any]], group: str) -> str | None:
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    drew = False
    ours: dict[str, list[list[float]]] = {}
    for r in rows:
        if r["kind"] != "harness" or r["group"] != group or not r.get("times"):
            continue
        if r["peer"] == "hookagent":
            ours.setdefault(r["store"], []).append(r["times"])
            continue
        ys = R.rolling_median(r["times"], 5)
        ax.plot(range(1, len(ys) + 1), ys, lw=1.1, label=label(r))
        drew = True
    for store, series in ours.items():
        ys = R.rolling_median(R.elementwise_median(series), 5)
        name = f"hookagent + {store} (median of {len(series)} rows)"
        ax.plot(range(1, len(ys) + 1), ys, lw=2.4, color=OURS_COLOURS.get(store, "k"), label=name)
        drew = True
    if not drew:
        plt.close(fig)
        return None
    ax.set_yscale("log")
    ax.set_xlabel("call number (W1, one session)")
    ax.set_ylabel("wall ms per call (running median of 5)")
    ax.set_title(TITLES.get(group, group))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    name = f"w1-{group}.png"
    fig.savefig(out / name)
    plt.close(fig)
    return name


def _long(out: Path, rows: list[dict[str, Any]]) -> str | None:
    series = [
        r for r in rows if r["kind"] == "ours" and r.get("times") and r["group"] != "neighbour"
    ]
    if not any("-10k" in r["name"] for r in series):
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4), dpi=110)
    for r in series:
        if r["store"] not in ("memory", "redis"):
            continue
        ys = R.rolling_median(r["times"], 51)
        name = f"{r['store']}, {len(ys):,} calls"
        ax.plot(range(1, len(ys) + 1), ys, lw=1.3, label=name)
    for x in (1000, 10000):
        ax.axvline(x, color="grey", lw=0.6, ls=":")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("call number")
    ax.set_ylabel("wall ms per call (running median of 51)")
    longest = max(len(r["times"]) for r in series)
    ax.set_title(f"hookagent, up to {longest:,} calls on one session (W1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "w1-long.png")
    plt.close(fig)
    return "w1-long.png"


def _bars(out: Path, rows: list[dict[str, Any]], which: str) -> str | None:
    items = []
    for r in rows:
        if r["kind"] != "harness" or not r.get("data"):
            continue
        v = R.metric(r, which, 0)
        if v:
            items.append((r["group"], r["peer"] == "hookagent", label(r), v))
    if not items:
        return None
    # ours: the median of its rows per store label
    merged: dict[tuple[str, bool, str], list[float]] = {}
    for g, ours, name, v in items:
        merged.setdefault((g, ours, name), []).append(v)
    order = ["memory", "redis", "postgres", "sqlite"]
    keys = sorted(merged, key=lambda k: (order.index(k[0]) if k[0] in order else 9, not k[1], k[2]))
    vals = [sorted(merged[k])[len(merged[k]) // 2] for k in keys]
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(keys) + 1.2), dpi=110)
    colours = ["#d62728" if k[1] else "#1f77b4" for k in keys]
    ax.barh(range(len(keys)), vals, color=colours)
    ax.set_yticks(
        range(len(keys)),
        [f"{k[2]}" + (f" (x{len(merged[k])})" if k[1] else "") for k in keys],
        fontsize=6.5,
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(
        "W2 calls/s (sessions x 5 calls, 50 in flight)"
        if which == "w2"
        else "W3 load + 1 call, ms (fresh process)"
    )
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:,.0f}" if which == "w2" else f" {v:,.1f}", va="center", fontsize=6)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    name = f"{which}.png"
    fig.savefig(out / name)
    plt.close(fig)
    return name


def _w4(out: Path) -> str | None:
    files = sorted(out.glob("w4-*.json"))
    if not files:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=110)
    width = 0.8 / len(files)
    for j, p in enumerate(files):
        d = json.loads(p.read_text())
        xs = [k + j * width for k in range(len(d["rows"]))]
        ys = [r["calls_per_s"] or 0 for r in d["rows"]]
        ax.bar(xs, ys, width=width, label=d["store"])
        for x, y, r in zip(xs, ys, d["rows"], strict=True):
            ax.text(
                x,
                y,
                f"{y:,.0f}\np99 {r['lat_p99_ms']:.0f} ms",
                ha="center",
                va="bottom",
                fontsize=6,
            )
        ax.set_xticks(
            [k + width * (len(files) - 1) / 2 for k in range(len(d["rows"]))],
            [f"{r['procs']} process{'es' if r['procs'] > 1 else ''}" for r in d["rows"]],
        )
    ax.set_ylabel("calls/s (all processes)")
    ax.set_title("W4: worker processes sharing one server, through the distributed gate")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "w4.png")
    plt.close(fig)
    return "w4.png"


def draw(out: Path, rows: list[dict[str, Any]], n: int) -> list[str]:
    made = [_w1_store(out, rows, g) for g in ("memory", "redis", "postgres", "sqlite")]
    made += [_long(out, rows), _bars(out, rows, "w2"), _bars(out, rows, "w3"), _w4(out)]
    return [m for m in made if m]
