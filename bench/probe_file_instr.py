#!/usr/bin/env python3
"""One JSON-file store operation N times, for instruction counts (``LocalCore``, one thread).

    valgrind --tool=callgrind --callgrind-out-file=/tmp/x.20 \\
        .venv/bin/python bench/probe_file_instr.py warm 20 --dir /tmp/hafile/instr-w20
    (the same with 120; (I(120) - I(20)) / 100 is one operation's user-space instructions)

``warm``: a warm load, then an append save of 4 messages, on one session (W2's calls 2-5).
``first``: an absent load, then the first save of a new session of a known user (call 1).
Counts, unlike time, do not move with the machine's load; the kernel's side is not in them.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore

K = "agent_state"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("op", choices=["warm", "first"])
    ap.add_argument("n", type=int)
    ap.add_argument("--dir", required=True, help="a fresh store root (removed first)")
    args = ap.parse_args()
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    core = LocalCore(root, sweep_after=600.0, cache_slots=256, writers="multi")
    st = AgentState("s", "u")
    st.context.extend(Msg.user(f"m{i}") for i in range(4))
    core.save("u", "s", st, 0, K, None)  # the user exists, the session is warm
    for i in range(args.n):
        if args.op == "warm":
            got = core.get("u", "s", K)
            assert got.state is not None
            got.state.context.extend(Msg.user(f"x{i}.{j}") for j in range(4))
            core.save("u", "s", got.state, got.version, K, None)
        else:
            sid = f"n{i}"
            assert core.get("u", sid, K).version == 0
            new = AgentState(sid, "u")
            new.context.extend(Msg.user(f"y{j}") for j in range(4))
            core.save("u", sid, new, 0, K, None)
    core.close()


if __name__ == "__main__":
    main()
