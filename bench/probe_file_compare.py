#!/usr/bin/env python3
"""Side-by-side summary of ``workload.py --json`` results: one row per file, medians per label.

    .venv/bin/python bench/probe_file_compare.py DIR/old-*.json DIR/new-*.json

Files are grouped by the part of their name before the first ``-`` (e.g. ``old``, ``new``).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def row(d: dict) -> dict[str, float]:
    w1, w2, w3 = d.get("w1", {}), d.get("w2", {}), d.get("w3", {})
    out = {
        "w1_1_20": w1["w_first"]["median_ms"],
        "w1_981_1000": w1["w_last"]["median_ms"],
        "w1_ratio": w1["last_over_first"],
        "cpu_1_20": w1["cpu"]["w_first"]["median_ms"],
        "cpu_981_1000": w1["cpu"]["w_last"]["median_ms"],
        "w1_cpu_ms_per_call": round(w1["client_cpu_s"] / w1["calls_done"] * 1000, 3),
        "bytes_over_text": w1["stored_over_text"],
        "w2_calls_s": w2["calls_per_s"],
        "w2_cpu_ms_per_call": round(w2["client_cpu_s"] / w2["calls_ok"] * 1000, 3),
    }
    if w3:
        out["w3_ms"] = w3["load_and_call_ms_median"]
        if "load_and_call_cpu_ms_median" in w3:
            out["w3_cpu_ms"] = w3["load_and_call_cpu_ms_median"]
    return out


def main() -> None:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for name in sys.argv[1:]:
        r = row(json.loads(Path(name).read_text()))
        label = Path(name).stem.split("-")[0]
        groups[label].append(r)
        print(Path(name).stem, json.dumps(r))
    for label, rows in groups.items():
        med = {k: round(statistics.median(r[k] for r in rows if k in r), 3) for k in rows[0]}
        print("median", label, json.dumps(med))


if __name__ == "__main__":
    main()
