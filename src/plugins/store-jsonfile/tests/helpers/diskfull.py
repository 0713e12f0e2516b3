"""G4 scenario: ``python diskfull.py rlimit|plain ROOT``; prints one JSON summary line.

``rlimit`` caps the file size with RLIMIT_FSIZE (EFBIG, no root needed; SIGXFSZ is ignored so
the write fails instead of killing the process); ``plain`` expects ROOT on a tiny tmpfs
(ENOSPC). Three saves that cannot fit (a big append, a big rewrite, a head too big after a
small append) must each raise ``StorageFull`` and leave every file byte-identical and no temp
file; then a save that fits must still work (a full disk does not poison the handle).
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import signal
import sys
from pathlib import Path

from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore

U, S, K = "u", "s", "agent_state"


def noise(n: int) -> str:
    """Text that does not compress (records are stored zlib-compressed when smaller)."""
    return secrets.token_urlsafe(n)[:n]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".lock")
    }


def main() -> None:
    mode, root = sys.argv[1], Path(sys.argv[2])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    core = LocalCore(root, sweep_after=None, cache_slots=8, writers="multi")
    state = AgentState(S, U)
    state.context.extend(Msg.user(f"{i}-" + "m" * 500) for i in range(10))
    core.save(U, S, state, 0, K, None)
    got = core.get(U, S, K)
    assert got.state is not None
    got.state.context.extend(Msg.user(f"a{i}") for i in range(4))
    core.save(U, S, got.state, 1, K, None)
    before = snapshot(root)
    biggest = max(len(v) for v in before.values())
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]

    def cases() -> dict[str, AgentState]:
        out = {}
        base = core.get(U, S, K).state
        assert base is not None
        base.context.extend(Msg.user(f"big{i}-" + noise(30_000)) for i in range(4))
        out["append_big"] = base
        base = core.get(U, S, K).state
        assert base is not None
        base.context.replace([*base.context, *[Msg.user(noise(30_000)) for _ in range(4)]])
        out["rewrite_big"] = base
        base = core.get(U, S, K).state
        assert base is not None
        base.context.append(Msg.user("small"))
        base.summary = noise(100_000)
        out["head_big"] = base
        return out

    result: dict[str, object] = {"mode": mode, "cases": {}}
    for name, st in cases().items():
        if mode == "rlimit":
            resource.setrlimit(resource.RLIMIT_FSIZE, (biggest + 4096, hard))
        try:
            core.save(U, S, st, 2, K, None)
            outcome = "saved"
        except Exception as exc:
            outcome = type(exc).__name__
        finally:
            if mode == "rlimit":
                resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
        after = snapshot(root)
        tmp = [p.name for p in root.rglob(".tmp.*")]
        result["cases"][name] = {  # type: ignore[index]
            "outcome": outcome,
            "identical": after == before,
            "tmp_left": tmp,
            "version": core.get(U, S, K).version,
        }
    fresh = LocalCore(root, sweep_after=None, cache_slots=0, writers="multi")
    got = fresh.get(U, S, K)
    assert got.state is not None
    result["history_after"] = len(got.state.context)
    got.state.context.append(Msg.user("fits"))
    result["save_after"] = core.save(U, S, got.state, 2, K, None)
    print(json.dumps(result))
    os._exit(0)


if __name__ == "__main__":
    main()
