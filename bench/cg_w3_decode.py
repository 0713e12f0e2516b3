"""Instructions of a cold projection's backend-independent part, for callgrind.

    python bench/cg_w3_decode.py --write /tmp/w3.commits [--calls 1000]
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        python bench/cg_w3_decode.py --read /tmp/w3.commits [--what all|rows]

``--write`` runs W1 calls (the bench's agent) on the in-memory session log and keeps its
commits as stored (first seq, last seq, the bytes), length-prefixed; ``--read`` loads them
(not counted) and, inside ``functools.reduce`` (the only call callgrind collects): ``all``
= ``rows_after`` + ``Projection.apply_rows`` + ``state()``, what a backend's cold
``read_rows_after`` and the store's rebuild do after the bytes arrive; ``rows`` =
``rows_after`` only; ``apply``: ``all`` but ``state()``; ``store``: a whole cold
``LogBackedStore.get_versioned`` on an in-memory log holding the commits (the newest
checkpoint, the history segments it names, the commits after them: what every backend's
cold load does once the bytes arrive, the memory log's own reads included). ``--write``
takes ``--segment-messages K`` (the recorder's option; 100000: no segment, the log an
older writer leaves). Prints the messages rebuilt, as a check.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import struct
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

USER, SESSION = "bench", "w3-decode"


async def _write(path: Path, calls: int, k: int) -> int:
    from bench_agent import make_config, one_call
    from hookagent import InMemoryAgentStateStore
    from hookagent_session_log import plugin

    config = make_config(
        InMemoryAgentStateStore(),
        session_log="memory://w3decode",
        plugins=[plugin],
        plugin_options={"session-log": {"segment_messages": k}},
    )
    for n in range(1, calls + 1):
        await one_call(config, USER, SESSION, n)
    log: Any = await (await config.kernel.store()).log()
    s = log._get(USER, SESSION)
    out = [struct.pack("<qq", s.head.seq, s.head.checkpoint_seq)]
    print(sum(len(c.data) for c in s.commits), "bytes stored")
    for c in s.commits:
        out.append(struct.pack("<qqq", c.first_seq, c.last_seq, len(c.data)) + c.data)
    path.write_bytes(b"".join(out))
    await config.aclose()
    return len(s.commits)


def load(path: Path) -> tuple[int, int, list[tuple[int, int, bytes]]]:
    raw = path.read_bytes()
    head, checkpoint = struct.unpack_from("<qq", raw)
    pos, commits = 16, []
    while pos < len(raw):
        first, last, n = struct.unpack_from("<qqq", raw, pos)
        pos += 24
        commits.append((first, last, raw[pos : pos + n]))
        pos += n
    return head, checkpoint, commits


def _store_cold(path: Path) -> Any:
    """A cold ``get_versioned`` on a memory log holding the stored commits (set up here,
    outside the collected call)."""
    from hookagent.sessionlog import InMemorySessionLog, LogHead
    from hookagent.sessionlog.memory import _Commit, _Session
    from hookagent_session_log.store import LogBackedStore

    head, checkpoint, commits = load(path)
    log = InMemorySessionLog()
    session = _Session(head=LogHead(head, 1, None, 0.0, "bench-head", checkpoint))
    for first, last, data in commits:
        session.starts.append(first)
        session.commits.append(_Commit(first, last, f"b{first}", "", data))
    log._sessions[USER] = {SESSION: session}
    loop = asyncio.new_event_loop()
    loop.run_until_complete(log.head(USER, SESSION))  # the loop's first run, not counted

    def cold() -> int:
        got = loop.run_until_complete(LogBackedStore(log).get_versioned(USER, SESSION))
        assert got.state is not None
        return len(got.state.context)

    return cold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write")
    ap.add_argument("--read")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--segment-messages", type=int, default=256)
    ap.add_argument("--what", default="all", choices=("all", "rows", "apply", "store"))
    a = ap.parse_args()
    if a.write:
        print(asyncio.run(_write(Path(a.write), a.calls, a.segment_messages)), "commits")
        return
    if a.what == "store":
        print(functools.reduce(lambda _, f: f(), [_store_cold(Path(a.read))], 0))
        return
    from hookagent.sessionlog import rows_after
    from hookagent_session_log.projection import Projection, gc_paused

    head, _, commits = load(Path(a.read))

    def cold() -> int:
        with gc_paused():
            rows = rows_after(commits, 0, head, where="bench")
            if a.what == "rows":
                return len(rows)
            proj = Projection(USER, SESSION)
            proj.apply_rows(rows)
            if a.what == "apply":
                return len(proj.messages)
            return len(proj.state().context)

    print(functools.reduce(lambda _, f: f(), [cold], 0))


if __name__ == "__main__":
    main()
