"""G1 harness: fork a writer, SIGKILL it after 5-50 ms, check what it acknowledged survived.

Run as ``python crashloop.py MODE ROOT KILLS SEED [MIN_ACKS]`` (MODE ``store`` or ``naive``);
prints one JSON summary line. After KILLS kills it goes on (up to 5 x KILLS) until the writer
has acknowledged MIN_ACKS saves, so a slow, loaded machine still proves progress. One process imports everything once and forks a child per kill, so each kill
costs a few tens of milliseconds. The child writes every acknowledged version to a pipe
*after* the save returned; the parent reads the pipe once the child is dead, so the last
complete entry is the newest version the writer was told is saved.
"""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import sys
import time
from pathlib import Path

from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile import localcore
from hookagent_store_jsonfile.localcore import LocalCore

U, S, KEY = "crash-user", "crash/../session", "agent_state"
PAD = "x" * 200
ACK = struct.Struct(">Q")


def store_child(root: Path, ack: int) -> None:
    localcore.COMPACT_MIN = 1024  # compact often: appends, compactions and rewrites all die
    core = LocalCore(root, sweep_after=None, cache_slots=4, writers="multi")
    while True:
        got = core.get(U, S, KEY)
        state = got.state or AgentState(S, U)
        nxt = got.version + 1
        if nxt % 9 == 0:  # every ninth save rewrites (compaction): the other protocol path
            state.context.replace(list(state.context)[-40:])
        state.context.extend(Msg.user(f"{nxt}-{j}-{PAD}") for j in range(4))
        state.summary = f"v{nxt}"
        version = core.save(U, S, state, got.version, KEY, None)
        os.write(ack, ACK.pack(version))


def naive_child(root: Path, ack: int) -> None:
    path = root / "state.json"
    version = 0
    while True:
        version += 1
        doc = {"version": version, "messages": [f"{i}-{PAD}" for i in range(3000)]}
        with open(path, "w") as fh:
            json.dump(doc, fh)
        os.write(ack, ACK.pack(version))


def check_store(root: Path) -> tuple[int, str | None]:
    core = LocalCore(root, sweep_after=None, cache_slots=0, writers="multi")
    try:
        got = core.get(U, S, KEY)
    except Exception as exc:
        return -1, f"{type(exc).__name__}: {exc}"
    finally:
        core.close()
    if got.state is None:
        return 0, None
    texts = [m.text for m in got.state.context]
    if got.state.summary != f"v{got.version}" or not texts[-1].startswith(f"{got.version}-3-"):
        return -1, f"mixed state at version {got.version}: {got.state.summary} {texts[-1][:10]}"
    return got.version, None


def check_naive(root: Path) -> tuple[int, str | None]:
    try:
        with open(root / "state.json") as fh:
            return int(json.load(fh)["version"]), None
    except FileNotFoundError:
        return 0, None
    except (ValueError, KeyError) as exc:
        return -1, f"{type(exc).__name__}: {exc}"


def main() -> None:
    mode, root, kills, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    min_acks = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    child = store_child if mode == "store" else naive_child
    check = check_store if mode == "store" else check_naive
    summary = {"mode": mode, "kills": 0, "acks": 0, "unreadable": 0, "regressions": 0}
    errors: list[str] = []
    last_acked = 0
    started = time.monotonic()
    while summary["kills"] < kills or (summary["acks"] < min_acks and summary["kills"] < 5 * kills):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer
            os.close(r)
            try:
                child(root, w)
            finally:
                os._exit(1)
        os.close(w)
        time.sleep(rng.uniform(0.005, 0.050))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        acks = [ACK.unpack_from(data, i)[0] for i in range(0, len(data) - len(data) % 8, 8)]
        summary["kills"] += 1
        summary["acks"] += len(acks)
        if acks:
            last_acked = acks[-1]
        version, error = check(root)
        if error is not None:
            summary["unreadable"] += 1
            errors.append(error)
            if mode == "naive":
                (root / "state.json").unlink(missing_ok=True)
                last_acked = 0
            continue
        if version < last_acked:
            summary["regressions"] += 1
            errors.append(f"loaded {version} < acknowledged {last_acked}")
        if mode == "naive" and version != last_acked:
            last_acked = version
    if mode == "store":
        core = LocalCore(root, sweep_after=None, cache_slots=0, writers="multi")
        summary["tmp_before_sweep"] = sum(
            1 for _, _, files in os.walk(root) for f in files if f.startswith(".tmp.")
        )
        summary["swept"] = core.sweep(0)
        summary["tmp_after_sweep"] = sum(
            1 for _, _, files in os.walk(root) for f in files if f.startswith(".tmp.")
        )
        summary["final_version"] = check_store(root)[0]
    summary["seconds"] = round(time.monotonic() - started, 2)
    summary["errors"] = errors[:5]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
