"""``summary.md`` (and the PNGs) of a sitting folder written by ``sitting.py``.

    python bench/sitting_report.py bench/results/sitting-<stamp>

The summary is markdown to paste into bench/README.md: the verdict (valid or not, and why),
the load, every row with its CPU/wall, the headline against each store's best peer
configuration (picked from the rows, ``sitting_rules.py``), W1/W2/W3 beside the peers, our
1,000- and 10,000-call rows, W4, the busy-neighbour pass, and the pictures (``plots.py``).
Exits 1 when the sitting is invalid.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sitting_rules as R  # noqa: E402
from sitting_plan import PEER_NAMES  # noqa: E402


def f(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}"


def load(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    rows = json.loads((out / "rows.json").read_text())
    for r in rows:
        r["data"], r["times"] = {}, None
        if r.get("result") and (out / r["result"]).exists():
            r["data"] = json.loads((out / r["result"]).read_text())
            t = out / r["result"].replace(".json", ".w1times.json")
            if t.exists():
                r["times"] = json.loads(t.read_text())
    return meta, rows


def label(r: dict[str, Any]) -> str:
    d = r.get("data") or {}
    if r["kind"] == "harness" and d.get("store_label"):
        v = f" [{r['variant']}]" if r.get("variant") else ""
        return f"{PEER_NAMES.get(r['peer'], r['peer'])} + {d['store_label']}{v}"
    return str(r["name"])


def line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(columns: list[str], body: Iterable[list[str]]) -> list[str]:
    """A markdown table: the header, its rule, and one line per row of cells."""
    return [line(columns), "|" + "---|" * len(columns), *map(line, body)]


def rows_table(rows: list[dict[str, Any]]) -> list[str]:
    def body() -> Iterator[list[str]]:
        for i, r in enumerate(rows, 1):
            if r["kind"] in ("burner_on", "burner_off"):
                yield [str(i), r["group"], f"*{r['name']}*", *[""] * 6]
                continue
            cb = "yes" if r.get("cpu_bound") else ""
            check = "ok"
            if r.get("rc") not in (0, None):
                check = f"**failed (rc {r['rc']})**"
            elif r.get("cpu_bound") and not r.get("checked", True):
                check = "busy core on purpose"
            elif r.get("cpu_bound") and any(
                (r.get(k) is not None and r[k] < R.MIN_CPU_WALL)
                for k in ("w1_cpu_wall", "w2_cpu_wall")
            ):
                check = "**below 0.8: contended**"
            loads = f"{R.fmt_load(r.get('load_start'))}, {R.fmt_load(r.get('load_end'))}"
            cw = f"{f(r.get('w1_cpu_wall'))}, {f(r.get('w2_cpu_wall'))}" if r.get("result") else ""
            started = str(r.get("started", ""))[11:]
            yield [
                str(i),
                r["group"],
                label(r),
                started,
                loads,
                f(r.get("wall_s"), 1),
                cw,
                cb,
                check,
            ]

    columns = ["#", "group", "row", "started UTC", "load 1 min (start, end)", "wall s"]
    return table([*columns, "CPU/wall W1, W2", "CPU-bound", "check"], body())


def headline_table(rows: list[dict[str, Any]], n: int) -> list[str]:
    def body() -> Iterator[list[str]]:
        for line in R.headline(rows, n):
            cells = []
            for name, nd in (("w1", 2), ("w2", 0), ("w3", 1)):
                h = line.get(name)
                if not h:
                    cells += ["no peer figure", "-"]
                    continue
                peer = rows[h["peer_row"]]
                cells.append(f"{f(h['ours'], nd)} / {f(h['peer'], nd)} ({label(peer)})")
                cells.append(f"**{f(h['factor'], 1)}x**" if h["factor"] else "-")
            local = " (vs the local-disk peers)" if line["store"] == "file" else ""
            yield [line["store"] + local, *cells]

    w1 = f"W1 ms/call, calls {n - 19}-{n}: ours / best peer"
    columns = ["store", w1, "x", "W2 calls/s: ours / best peer", "x"]
    return table([*columns, "W3 load + call ms: ours / best peer", "x"], body())


def harness_table(rows: list[dict[str, Any]], n: int) -> list[str]:
    mid = max(1, n // 2 - 9)

    def ratio(i: int, r: dict[str, Any], b: float | None) -> str:
        """Each peer row's last window over the hookagent rows run beside it."""
        if r["peer"] == "hookagent" or not b:
            return "-"
        parts = []
        for o in rows:
            if o.get("partner_of") == i:
                ob = R.window_ms(o.get("times"), n - 19, n)
                if ob:
                    parts.append(f"{b / ob:.0f} ({o['store']})")
        return ", ".join(parts) or "-"

    def body() -> Iterator[list[str]]:
        for i, r in enumerate(rows):
            if r["kind"] != "harness" or not r.get("data"):
                continue
            ts = r.get("times")
            a, m = R.window_ms(ts, 1, 20), R.window_ms(ts, mid, mid + 19)
            b = R.window_ms(ts, n - 19, n)
            w2, w3 = r["data"].get("w2") or {}, r["data"].get("w3") or {}
            hist = "yes" if R.history_ok(r) else "**NO**"
            if R.history_ok(r, "w1") and not R.history_ok(r, "w2"):
                hist = f"W1 yes; W2 **{w2.get('errors')} errors**"
            calls = f"{len(ts or [])}" + (" (cut)" if R.cut(r) else "")
            w2n = (w2.get("sessions") or 0) * (w2.get("calls_per_session") or 0)
            yield [
                str(i + 1), label(r), calls, f(a), f(m), f(b), f(b / a if a and b else None),
                ratio(i, r, b), f"{f(w2.get('calls_per_s'), 0)} ({w2n})",
                f(w2.get("lat_p50_ms"), 1), f(w3.get("load_and_call_ms_median"), 1),
                f(w3.get("open_ms_median"), 1), f(w3.get("import_s_median")), hist,
            ]  # fmt: skip

    columns = ["#", "peer + store", "W1 calls", "calls 1-20", f"{mid}-{mid + 19}", f"{n - 19}-{n}"]
    columns += ["last/first", "x ours beside", "W2 calls/s (calls)", "W2 p50 ms", "W3 ms"]
    return table([*columns, "W3 open ms", "import s", "history"], body())


def ours_table(rows: list[dict[str, Any]]) -> list[str]:
    def body() -> Iterator[list[str]]:
        for r in rows:
            d = r.get("data") or {}
            w1 = d.get("w1")
            if r["kind"] != "ours" or not w1 or r["name"].find("-10k") >= 0:
                continue
            c = w1.get("cpu") or {}
            windows = [
                f"{f(w1[k]['median_ms'])} ({f((c.get(k) or {}).get('median_ms'))})"
                for k in ("w_first", "w_mid", "w_last")
            ]
            w2, w3 = d.get("w2") or {}, d.get("w3") or {}
            w3_ms = f(w3.get("load_and_call_ms_median"), 1)
            w3_cpu = f(w3.get("load_and_call_cpu_ms_median"), 1)
            yield [
                d["label"], str(w1["calls_done"]), *windows, f(w1["last_over_first"]),
                f(w1["total_s"]), f(r.get("w1_cpu_wall")), f(w2.get("calls_per_s"), 0),
                f(w2.get("lat_p95_ms"), 1), f(r.get("w2_cpu_wall")), f"{w3_ms} ({w3_cpu})",
                f(w3.get("open_ms_median"), 1), f(w1.get("stored_over_encoded")),
            ]  # fmt: skip

    columns = ["store", "calls", "1-20", "491-510", "981-1000", "last/first", "total s"]
    columns += ["CPU/wall W1", "W2 calls/s", "W2 p95 ms", "CPU/wall W2", "W3 ms (CPU ms)"]
    return table([*columns, "store open ms", "stored / encoded"], body())


def long_table(rows: list[dict[str, Any]]) -> list[str]:
    def body() -> Iterator[list[str]]:
        for r in rows:
            if r["kind"] != "ours" or "-10k" not in r["name"] or not r.get("times"):
                continue
            ts = r["times"]
            n = len(ts)
            a, b = R.window_ms(ts, 1, 20), R.window_ms(ts, 981, 1000)
            c = R.window_ms(ts, n - 19, n)
            w1 = r["data"].get("w1") or {}
            yield [
                r["store"], f"{n:,}", f(a, 3), f(b, 3), f"{f(c, 3)} ({n - 19:,}-{n:,})",
                f"**{f(c / b if b and c else None)}**", f(w1.get("total_s")),
                f(r.get("w1_cpu_wall")),
            ]  # fmt: skip

    columns = ["store", "calls", "1-20", "981-1000", "9,981-10,000"]
    columns += ["9,981-10,000 / 981-1,000 (target ≤ 1.1)", "total s", "CPU/wall"]
    return table(columns, body())


def w4_table(out_dir: Path) -> list[str]:
    def body() -> Iterator[list[str]]:
        for p in sorted(out_dir.glob("w4-*.json")):
            d = json.loads(p.read_text())
            for r in d["rows"]:
                h = r["history"]
                bad = f"**{h['sessions_bad']} bad** {h['first_bad'][:1]}"
                ok = "ok" if not h["sessions_bad"] else bad
                yield [
                    d["store"], str(r["procs"]), f"{r['calls_ok']}/{r['calls_expected']}",
                    f(r["calls_per_s"], 0), f(r["lat_p50_ms"], 1), f(r["lat_p99_ms"], 1),
                    str(r["errors"]), f(r["cpu_over_wall_per_proc"]), f(r["loadavg_start"]),
                    f"{ok} ({h['sessions_checked']} sessions)",
                ]  # fmt: skip

    columns = ["store", "processes", "calls", "calls/s", "p50 ms", "p99 ms", "errors"]
    return table([*columns, "CPU/wall per process", "load", "history check"], body())


def neighbour_table(rows: list[dict[str, Any]]) -> list[str]:
    def body() -> Iterator[list[str]]:
        for r in rows:
            if r["kind"] != "ours" or r["group"] != "neighbour" or not r.get("data"):
                continue
            w2, w3 = r["data"].get("w2") or {}, r["data"].get("w3") or {}
            reps = ", ".join(f(x.get("load_and_call_ms"), 1) for x in w3.get("reps", []))
            w3_ms = f"{f(w3.get('load_and_call_ms_median'), 1)} ({reps})"
            yield [r["store"], f(w2.get("calls_per_s"), 0), f(r.get("w2_cpu_wall")), w3_ms]

    return table(["store", "W2 calls/s", "CPU/wall W2", "W3 ms, median (reps)"], body())


def baselines_section(out_dir: Path) -> list[str]:
    out: list[str] = []
    t = out_dir / "peers" / "tables.md"
    text = t.read_text() if t.exists() else ""
    if "### baselines" in text:
        part = text.split("### baselines", 1)[1].split("\n### ", 1)[0].strip()
        out += ["### Physical limits (the harness's baselines.py, same sitting)", "", part, ""]
    logs = sorted((out_dir / "logs").glob("*-baselines_*.log"))
    if logs:
        names = ", ".join(f"`logs/{p.name}`" for p in logs)
        out.append(f"The store owners' scripts, same sitting: {names}.")
    return out


def main() -> int:
    out = Path(sys.argv[1])
    meta, rows = load(out)
    n = R.common_calls(rows)
    valid, why, failed = R.verdict(rows)
    pngs: list[str] = []
    try:
        import plots

        pngs = plots.draw(out, rows, n)
    except ImportError as e:  # matplotlib lives in the bench venv only
        print(f"no pictures: {e} (pip install matplotlib into the bench venv)", file=sys.stderr)
    lines = [f"## The sitting of {meta.get('started', '?')} UTC", ""]
    lines.append(
        "**Verdict: VALID** (every CPU-bound row at CPU/wall ≥ 0.8)."
        if valid
        else "**Verdict: INVALID**: " + "; ".join(why)
    )
    if failed:
        lines.append("\n**Rows that failed**: " + "; ".join(failed))
    ls, le = meta.get("loadavg_start"), meta.get("loadavg_end")
    loads = [r["load_start"][0] for r in rows if r.get("load_start")]
    lines += [
        "",
        f"* **When**: {meta.get('started', '?')} to {meta.get('ended', '?')} UTC; commit "
        f"`{str(meta.get('commit', '?'))[:12]}` (a `git archive` snapshot of `src/`).",
        f"* **Load average** (1, 5, 15 min): {ls} at the start, {le} at the end; 1-min load at the "
        f"start of a row: {min(loads, default=0):.2f}-{max(loads, default=0):.2f}.",
        f"* **Counts**: {meta.get('counts')}; W2 = sessions x 5 calls, 50 in flight.",
        "* **Order**: store by store; every peer row back to back with hookagent rows on the same "
        "store, alternating which runs first; each peer's ratio is against its neighbours. "
        "CPU-bound rows (in memory, no persistence) must show CPU/wall ≥ 0.8.",
        "* **Servers**: the harness's throwaway PostgreSQL 15 (127.0.0.1:55432) and Redis "
        "(127.0.0.1:6390), for every row, ours included.",
        "",
        f"### Headline: hookagent against each store's best peer configuration (W1 at calls {n - 19}-{n})",
        "",
        *headline_table(rows, n),
        "",
        "The best peer is picked per store and per figure from every configuration the sitting "
        "ran (LangGraph's `durability` async/exit/sync and its delta channel, OpenAI's sessions, "
        "AgentScope's storages, ADK's session services); ours is the row that ran beside it. "
        "A row cut by its W1 budget has no W1 figure here, and its W3 resumes a shorter "
        "session (its W1 calls, in the table below), which favours the peer.",
        "",
    ]
    if "w1-memory.png" in pngs:
        lines += [
            "| in memory | Redis |",
            "|---|---|",
            "| ![](w1-memory.png) | ![](w1-redis.png) |",
        ]
        lines += ["| PostgreSQL | local disk (SQLite, our file store) |", "|---|---|"]
        lines += ["| ![](w1-postgres.png) | ![](w1-sqlite.png) |", ""]
    lines += ["### W1, W2, W3 beside the peers (their harness)", "", *harness_table(rows, n), ""]
    for p in ("w2.png", "w3.png"):
        if p in pngs:
            lines.append(f"![]({p})")
    lines += ["", "### Ours: 1,000 calls (wall ms per call, client CPU ms in brackets)", ""]
    lines += [*ours_table(rows), ""]
    lines += ["### Ours: 10,000 calls", "", *long_table(rows), ""]
    if "w1-long.png" in pngs:
        lines += ["![](w1-long.png)", ""]
    lines += ["### W4: worker processes sharing one Redis / PostgreSQL (distributed gate)", ""]
    lines += [*w4_table(out), ""]
    if "w4.png" in pngs:
        lines += ["![](w4.png)", ""]
    lines += ["### Beside a busy core (not held to CPU/wall)", "", *neighbour_table(rows), ""]
    lines += [*baselines_section(out), ""]
    lines += ["### Every row: load and CPU/wall", "", *rows_table(rows), ""]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:4]))
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
