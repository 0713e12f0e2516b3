"""G6 worker: ``python casworker.py MODE ROOT CTRL WORKER ATTEMPTS`` (MODE ``store``/``naive``).

Each attempt reads the slot, appends a unique token message (every seventh attempt rewrites
the whole history instead of appending) and saves with compare-and-set at the version it read; it writes one JSON line per attempt to CTRL/out<WORKER>: ``[token, version or null]``
(null: the CAS lost with VersionConflict, so the token must not be stored). ``naive`` does a
read-modify-write of a JSON file without any lock (atomic rename, so never torn): it loses
updates, which proves the checker can see them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from hookagent.errors import VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore

U, S = "cas-user", "cas-session"


async def store_mode(
    root: Path, worker: int, attempts: int, out: list[object], fsspec_cas: bool = False
) -> None:
    if fsspec_cas:  # the conditional-write protocol (exclusive create) on local fsspec
        import fsspec
        from hookagent_store_jsonfile import FsspecJsonFileStore

        store: Any = FsspecJsonFileStore(str(root), writers="multi", fs=fsspec.filesystem("file"))
    else:
        store = LocalJsonFileStore(root)
    for i in range(attempts):
        token = f"w{worker}-{i}"
        got = await store.get_versioned(U, S)
        state = got.state or AgentState(S, U)
        if i % 7 == 0:  # some saves rewrite the whole history (a new generation)
            state.context.replace(list(state.context))
        state.context.append(Msg.user(token))
        try:
            version = await store.save_if_version(U, S, state, got.version)
        except VersionConflict:
            out.append([token, None])
        else:
            out.append([token, version])
    await store.aclose()


async def mixed_mode(root: Path, worker: int, attempts: int, out: list[object]) -> None:
    """Saves, deletes, reads and lists racing on one slot: every call must succeed."""
    import random

    from hookagent.store.base import UNCONDITIONAL

    rng = random.Random(worker)
    store = LocalJsonFileStore(root)
    for i in range(attempts):
        op = rng.choice(["save", "save", "save_obs", "get", "delete", "delete_key", "list"])
        if op == "save":
            got = await store.get_versioned(U, S)
            state = got.state or AgentState(S, U)
            state.context.append(Msg.user(f"w{worker}-{i}"))
            out.append([op, await store.save_if_version(U, S, state, UNCONDITIONAL)])
        elif op == "save_obs":
            state = AgentState(S, U, summary=f"w{worker}-{i}")
            out.append([op, await store.save_if_version(U, S, state, UNCONDITIONAL, key="obs")])
        elif op == "get":
            got = await store.get_versioned(U, S)
            assert (got.state is None) == (got.version == 0)
            out.append([op, got.version])
        elif op == "delete":
            out.append([op, await store.delete(U, S)])
        elif op == "delete_key":
            out.append([op, await store.delete(U, S, key="obs")])
        else:
            out.append([op, list((await store.list_session_ids(U)).session_ids)])
    await store.aclose()


def naive_mode(root: Path, worker: int, attempts: int, out: list[object]) -> None:
    path = root / "naive.json"
    for i in range(attempts):
        token = f"w{worker}-{i}"
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            doc = {"version": 0, "tokens": []}
        doc["version"] += 1
        doc["tokens"].append(token)
        tmp = root / f".naive.{os.getpid()}"
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)
        out.append([token, doc["version"]])


def main() -> None:
    mode, root, ctrl, worker, attempts = sys.argv[1:6]
    go = Path(ctrl) / "go"
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    out: list[object] = []
    if mode == "store":
        anyio.run(store_mode, Path(root), int(worker), int(attempts), out)
    elif mode == "fsspec":
        anyio.run(store_mode, Path(root), int(worker), int(attempts), out, True)
    elif mode == "mixed":
        anyio.run(mixed_mode, Path(root), int(worker), int(attempts), out)
    else:
        naive_mode(Path(root), int(worker), int(attempts), out)
    (Path(ctrl) / f"out{worker}").write_text("\n".join(json.dumps(o) for o in out))


if __name__ == "__main__":
    main()
