"""The bench sitting's rules (bench/sitting_rules.py) and W4's history check (bench/w4.py).

No timing is measured or asserted: rows are made up, and the rules are checked on them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import sitting_rules as R  # noqa: E402


def harness(
    peer: str,
    store: str,
    group: str,
    per_call: float,
    *,
    calls: int = 300,
    w2: float = 100.0,
    w3: float = 50.0,
    lost: bool = False,
    variant: str = "",
    **kw: Any,
) -> dict[str, Any]:
    n = calls * 4
    return {
        "kind": "harness",
        "peer": peer,
        "store": store,
        "group": group,
        "variant": variant,
        "name": f"{peer} {store} {variant}",
        "rc": 0,
        "times": [per_call] * calls,
        "data": {
            "w1": {"history_len": n - 4 if lost else n, "history_expected": n},
            "w2": {"calls_per_s": w2, "errors": 0},
            "w3": {"load_and_call_ms_median": w3, "reps": [{}]},
        },
        **kw,
    }


def test_a_cpu_bound_row_below_the_line_makes_the_sitting_invalid() -> None:
    rows = [
        {"kind": "harness", "name": "ours mem", "cpu_bound": True, "rc": 0, "w1_cpu_wall": 0.97},
        {"kind": "harness", "name": "lg pg", "cpu_bound": False, "rc": 0, "w1_cpu_wall": 0.3},
        {"kind": "ours", "name": "busy", "cpu_bound": True, "checked": False, "w2_cpu_wall": 0.4},
    ]
    assert R.verdict(rows) == (True, [], [])
    rows.append(
        {
            "kind": "harness",
            "name": "adk mem",
            "cpu_bound": True,
            "rc": 0,
            "w1_cpu_wall": 0.95,
            "w2_cpu_wall": 0.79,
            "load_start": [2.5, 1, 1],
        }
    )
    valid, why, failed = R.verdict(rows)
    assert not valid and failed == []
    assert why == ["row 4 adk mem: W2 CPU/wall 0.79 < 0.8 (load 2.50)"]


def test_a_failed_row_is_reported_apart() -> None:
    valid, why, failed = R.verdict([{"kind": "harness", "name": "x", "rc": 1}])
    assert valid and why == [] and failed == ["row 1 x: exit code 1"]


def test_the_best_peer_is_the_fastest_configuration_of_the_store() -> None:
    rows = [
        harness("hookagent", "postgres", "postgres", 1.0),
        harness("langgraph", "postgres", "postgres", 100.0, w2=70, w3=140),
        harness("langgraph", "postgres", "postgres", 30.0, variant="exit", w2=90, w3=150),
        harness("openai_agents", "postgres", "postgres", 50.0, w2=120, w3=90),
        harness("agentscope", "postgres", "postgres", 10.0, lost=True),  # lost a message
        harness("langgraph", "sqlite", "sqlite", 5.0),  # another store
    ]
    rows[0]["partner_of"] = 2
    n = R.common_calls(rows)
    assert n == 300
    assert R.best_peer(rows, "postgres", "w1", n) == 2  # durability=exit, not the default
    assert R.best_peer(rows, "postgres", "w2", n) == 3  # higher is better
    assert R.best_peer(rows, "postgres", "w3", n) == 3
    [line] = [h for h in R.headline(rows, n) if h["store"] == "postgres"]
    assert line["w1"]["ours"] == 1.0 and line["w1"]["factor"] == 30.0
    assert line["w2"]["ours"] is None  # ours ran beside row 2 only


def test_the_file_store_is_held_against_the_local_disk_peers() -> None:
    rows = [
        harness("openai_agents", "sqlite", "sqlite", 40.0),
        harness("hookagent", "file", "sqlite", 2.0, partner_of=0),
        harness("hookagent", "sqlite", "sqlite", 1.0, partner_of=0),
    ]
    assert R.best_peer(rows, "file", "w1", 300) == 0
    assert R.ours_beside(rows, 0, "file") == [1]
    assert R.ours_beside(rows, 0, "sqlite") == [2]
    assert R.best_peer(rows, "redis", "w1", 300) is None


def test_a_row_cut_by_its_budget_sets_no_common_window() -> None:
    slow = harness("adk", "mem", "memory", 900.0, calls=150)
    slow["data"]["w1"]["cut_by_budget"] = True
    rows = [harness("langgraph", "none", "memory", 5.0), slow]
    assert R.common_calls(rows) == 300
    assert R.metric(slow, "w1", 300) is None
    assert R.best_peer(rows, "memory", "w1", 300) == 0


def test_windows_and_medians() -> None:
    ts = [float(i) for i in range(1, 101)]
    assert R.window_ms(ts, 81, 100) == 90.5
    assert R.window_ms(ts, 91, 110) is None
    assert R.rolling_median([1, 100, 1, 1, 1], 3) == [50.5, 1, 1, 1, 1]
    assert R.elementwise_median([[1, 2, 3], [3, 2, 1, 9], [2, 2, 2]]) == [2, 2, 2]


def _call(n: int) -> list[Any]:
    from bench_texts import final_text, tool_text, user_text
    from hookagent import Msg, TextBlock, ToolResultBlock, ToolUseBlock

    use = ToolUseBlock(f"call_{n}", "lookup", {"key": n})
    result = ToolResultBlock(use.id, "lookup", (TextBlock(tool_text(n)),))
    return [
        Msg.user(user_text(n)),
        Msg.assistant([use]),
        Msg("tool", [result]),
        Msg.assistant([TextBlock(final_text(n))]),
    ]


def test_w4_history_check_finds_a_lost_or_duplicated_call() -> None:
    import w4

    own = [m for n in (1, 2, 3) for m in _call(n)]
    assert w4.check_session(own, [1, 2, 3], {}) == ""
    assert "8 messages, expected 12" in w4.check_session(own[:8], [1, 2, 3], {})
    swapped = _call(2) + _call(1) + _call(3)
    assert "not" in w4.check_session(swapped, [1, 2, 3], {})
    torn = own[:4] + own[5:8] + own[4:5] + own[8:]  # a call's messages out of place
    assert w4.check_session(torn, [1, 2, 3], {}) != ""
    # a shared session: any interleaving of the workers, each worker's calls in its order
    per = {0: [1, 3], 1: [2, 4]}
    mixed = _call(2) + _call(1) + _call(3) + _call(4)
    assert w4.check_session(mixed, [1, 2, 3, 4], per) == ""
    twice = _call(2) + _call(1) + _call(1) + _call(4)
    assert "once" in w4.check_session(twice, [1, 2, 3, 4], per)
    reordered = _call(3) + _call(1) + _call(2) + _call(4)
    assert "out of order" in w4.check_session(reordered, [1, 2, 3, 4], per)
