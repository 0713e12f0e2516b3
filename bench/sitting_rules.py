"""The sitting's rules, kept apart so they can be tested: validity, windows, the best peer.

* **Validity**: a row that should be CPU-bound (in memory, or no persistence) and whose client
  CPU/wall (W1 or W2) falls below ``MIN_CPU_WALL`` lost the CPU to something else: the
  sitting is invalid. Rows run beside a busy core on purpose are not held to it.
* **Best peer per store**: among the peers' rows of the store's group (every configuration,
  every durability mode), the fastest at the common W1 window, the highest W2 calls/s, the
  fastest W3, each picked from the rows; a row that lost messages or had errors is not a
  candidate. The file store has no peer of its own: it is held against the local-disk
  (SQLite) rows.
* **Ours beside it**: the hookagent rows that ran next to that peer row (same store).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

MIN_CPU_WALL = 0.8
GROUP_OF = {"memory": "memory", "redis": "redis", "postgres": "postgres", "sqlite": "sqlite"}
GROUP_OF["file"] = "sqlite"
HARNESS_STORE = {"memory": "mem", "file": "file", "redis": "redis", "postgres": "postgres"}
HARNESS_STORE["sqlite"] = "sqlite"
STORES = ("memory", "file", "redis", "postgres", "sqlite")

Row = dict[str, Any]


def verdict(rows: Sequence[Row]) -> tuple[bool, list[str], list[str]]:
    """(valid, why not, rows that failed to run)."""
    why: list[str] = []
    failed: list[str] = []
    for i, r in enumerate(rows, 1):
        if r.get("kind") in ("burner_on", "burner_off"):
            continue
        if r.get("rc") not in (0, None):
            failed.append(f"row {i} {r['name']}: exit code {r['rc']}")
        if not (r.get("cpu_bound") and r.get("checked", True)):
            continue
        for part in ("w1", "w2"):
            cw = r.get(f"{part}_cpu_wall")
            if cw is not None and cw < MIN_CPU_WALL:
                why.append(
                    f"row {i} {r['name']}: {part.upper()} CPU/wall {cw:.2f} < {MIN_CPU_WALL} "
                    f"(load {fmt_load(r.get('load_start'))})"
                )
    return not why, why, failed


def fmt_load(load: Any) -> str:
    return "-" if not load else f"{load[0]:.2f}"


def window_ms(times: Sequence[float] | None, a: int, b: int) -> float | None:
    """Median per-call ms over calls a..b (1-based, inclusive), if the run reached b."""
    if not times or len(times) < b or a < 1:
        return None
    return float(statistics.median(times[a - 1 : b]))


def cut(r: Row) -> bool:
    return bool(((r.get("data") or {}).get("w1") or {}).get("cut_by_budget"))


def common_calls(rows: Sequence[Row]) -> int:
    """The call every harness row reached that was not cut by its W1 budget (the window
    ends there; a cut row has no figure at it, and is no candidate for best peer)."""
    ns = [
        len(r["times"])
        for r in rows
        if r.get("kind") == "harness" and r.get("times") and not cut(r)
    ]
    return min(ns) if ns else 0


def history_ok(r: Row, part: str | None = None) -> bool:
    """No lost message and no error in W1/W2 (``part``: what that workload's figure needs)."""
    data = r.get("data") or {}
    w1 = data.get("w1") or {}
    w2 = data.get("w2") or {}
    w3 = data.get("w3") or {}
    # W3 resumes W1's session: a W1 that lost messages leaves W3 a shorter history
    if part != "w2" and w1 and w1.get("history_len") != w1.get("history_expected"):
        return False
    if part in (None, "w2") and w2 and w2.get("errors", 0) != 0:
        return False
    return not (part == "w3" and any("error" in x for x in w3.get("reps", [])))


def metric(r: Row, name: str, n: int) -> float | None:
    data = r.get("data") or {}
    if name == "w1":
        return window_ms(r.get("times"), n - 19, n)
    if name == "w2":
        return (data.get("w2") or {}).get("calls_per_s")
    if name == "w3":
        return (data.get("w3") or {}).get("load_and_call_ms_median")
    raise ValueError(name)


HIGHER_IS_BETTER = {"w1": False, "w2": True, "w3": False}


def best_peer(rows: Sequence[Row], store: str, name: str, n: int) -> int | None:
    """Index (in ``rows``) of the best peer configuration for ``store`` by ``name``."""
    group = GROUP_OF[store]
    cands: list[tuple[float, int]] = []
    for i, r in enumerate(rows):
        if r.get("kind") != "harness" or r.get("peer") in ("hookagent", "", None):
            continue
        if r.get("group") != group or r.get("rc") not in (0, None) or not history_ok(r, name):
            continue
        v = metric(r, name, n)
        if v is None:
            continue
        cands.append((-v if HIGHER_IS_BETTER[name] else v, i))
    return min(cands)[1] if cands else None


def ours_beside(rows: Sequence[Row], peer_index: int, store: str) -> list[int]:
    """Our harness rows on ``store`` that ran next to the peer row ``peer_index``."""
    hs = HARNESS_STORE[store]
    return [
        i
        for i, r in enumerate(rows)
        if r.get("partner_of") == peer_index and r.get("peer") == "hookagent" and r["store"] == hs
    ]


def ours_median(rows: Sequence[Row], idx: Sequence[int], name: str, n: int) -> float | None:
    vals = [v for i in idx if (v := metric(rows[i], name, n)) is not None]
    return float(statistics.median(vals)) if vals else None


def headline(rows: Sequence[Row], n: int) -> list[dict[str, Any]]:
    """Per store and metric: ours beside the best peer, the peer, and the factor."""
    out = []
    for store in STORES:
        line: dict[str, Any] = {"store": store}
        for name in ("w1", "w2", "w3"):
            b = best_peer(rows, store, name, n)
            if b is None:
                line[name] = None
                continue
            ours = ours_median(rows, ours_beside(rows, b, store), name, n)
            peer = metric(rows[b], name, n)
            factor = None
            if ours and peer:
                factor = ours / peer if HIGHER_IS_BETTER[name] else peer / ours
            line[name] = {"ours": ours, "peer": peer, "peer_row": b, "factor": factor}
        out.append(line)
    return out


def rolling_median(xs: Sequence[float], k: int) -> list[float]:
    """Centered running median (window k, shrunk at the ends): per-call times are spiky."""
    h = k // 2
    return [float(statistics.median(xs[max(0, i - h) : i + h + 1])) for i in range(len(xs))]


def elementwise_median(series: Sequence[Sequence[float]]) -> list[float]:
    series = [s for s in series if s]
    if not series:
        return []
    n = min(len(s) for s in series)
    return [float(statistics.median(s[i] for s in series)) for i in range(n)]


def pick(rows: Sequence[Row], pred: Callable[[Row], bool]) -> list[int]:
    return [i for i, r in enumerate(rows) if pred(r)]
