#!/usr/bin/env python3
"""CPU per store operation of the JSON-file store (``LocalCore``, one thread), for A/B runs.

    .venv/bin/python bench/probe_file_cpu.py --dir /tmp/hafile/cpu-new [--ops 300] [--nocache]
    /work/main/.venv/bin/python bench/probe_file_cpu.py --dir /tmp/hafile/cpu-main

Prints ``time.process_time()`` (user + system) per op in µs: a warm load plus an append save
of 4 messages on one session, and an absent load plus the first save of a new session (W2's
first call). ``--nocache`` turns the directory fd cache off (``DirCache(0)``) where there is
one. Run each variant in a directory never used before (``--dir`` is removed first, but ext4
allocates new inodes more slowly near many just-deleted ones), alternate the variants, and
quote the load average: on a shared machine even CPU time moves by 20-50%.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore
from probe_file_syscalls import turn

K = "agent_state"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--nocache", action="store_true")
    a = ap.parse_args()
    root = Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    core = LocalCore(root, sweep_after=600.0, cache_slots=256, writers="multi")
    if a.nocache:
        from hookagent_store_jsonfile.dircache import DirCache

        core.dirs = DirCache(0)
    n = a.ops
    turns = [turn(i) for i in range(n + 1)]
    core.save("u", "warmup", AgentState("warmup", "u"), 0, K, None)  # the user exists
    first = AgentState("s", "u")
    first.context.extend(turns[0])
    core.save("u", "s", first, 0, K, None)
    c0 = time.process_time()
    for i in range(n):
        got = core.get("u", "s", K)
        assert got.state is not None
        got.state.context.extend(turns[i + 1])
        core.save("u", "s", got.state, got.version, K, None)
    warm = (time.process_time() - c0) / n
    states = []
    for i in range(n):
        state = AgentState(f"f{i}", "u")
        state.context.extend(turns[i])
        states.append(state)
    c0 = time.process_time()
    for i in range(n):
        core.get("u", f"f{i}", K)
        core.save("u", f"f{i}", states[i], 0, K, None)
    new = (time.process_time() - c0) / n
    core.close()
    print(json.dumps({"warm_load_and_append_us": round(warm * 1e6),
                      "absent_load_and_first_save_us": round(new * 1e6)}))  # fmt: skip


if __name__ == "__main__":
    main()
