#!/usr/bin/env python3
"""CPU of a warm load and an append save of 4 messages at a history of N (``LocalCore``).

    .venv/bin/python bench/probe_file_warm.py 40000 --dir /tmp/hafile/warm

Prints the min and the 10th percentile of 200 of each (``time.process_time``, µs): a
history copied per call shows as growth with N. Wall time is not measured (shared machine).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore

K = "agent_state"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, help="messages in the history")
    ap.add_argument("--dir", default=None, help="parent of a fresh store root")
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    if args.dir:
        Path(args.dir).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=args.dir))
    core = LocalCore(root, sweep_after=None, cache_slots=16, writers="multi")
    state = AgentState("s", "u")
    state.context.extend(Msg.user(f"m{i}") for i in range(args.n))
    core.save("u", "s", state, 0, K, None)
    loads: list[float] = []
    saves: list[float] = []
    for i in range(args.rounds):
        c = time.process_time()
        got = core.get("u", "s", K)
        loads.append(time.process_time() - c)
        assert got.state is not None
        got.state.context.extend(Msg.user(f"x{i}.{j}") for j in range(4))
        c = time.process_time()
        core.save("u", "s", got.state, got.version, K, None)
        saves.append(time.process_time() - c)
    loads.sort()
    saves.sort()
    p10 = len(loads) // 10

    def us(x: float) -> int:
        return round(x * 1e6)

    print(
        f"n={args.n} warm load min/p10 {us(loads[0])}/{us(loads[p10])} us, "
        f"append save min/p10 {us(saves[0])}/{us(saves[p10])} us"
    )


if __name__ == "__main__":
    main()
