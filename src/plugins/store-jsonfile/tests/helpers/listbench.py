"""Listing cost by hand: N sessions of one user, listed in pages of P (issue 13, item 5).

Run as ``python listbench.py file|sqlite DIR [N] [P]``; prints one JSON line: the seconds
to create the sessions and to walk every page (right after creating them, again on the same
store, and on a new store instance), and the pages seen. Not a test: no time is asserted anywhere.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from hookagent.messages import Msg
from hookagent.state import AgentState


def make(kind: str, folder: Path) -> Any:
    if kind == "file":
        from hookagent_store_jsonfile import LocalJsonFileStore

        return LocalJsonFileStore(folder / "root")
    from hookagent_store_sql import SQLAgentStateStore

    return SQLAgentStateStore(f"sqlite+aiosqlite:///{folder / 'list.db'}")


async def walk(store: Any, page: int) -> tuple[float, int, int]:
    start = time.perf_counter()
    cursor, pages, seen = None, 0, 0
    while True:
        got = await store.list_session_ids("bench-user", limit=page, cursor=cursor)
        pages, seen = pages + 1, seen + len(got.session_ids)
        cursor = got.next_cursor
        if cursor is None:
            return time.perf_counter() - start, pages, seen


async def main(kind: str, folder: Path, n: int, page: int) -> None:
    store = make(kind, folder)
    start = time.perf_counter()
    for first in range(0, n, 50):

        async def one(i: int) -> None:
            sid = f"session-{i:06d}"
            state = AgentState(sid, "bench-user")
            state.context.append(Msg.user("hello"))
            await store.save_if_version("bench-user", sid, state, 0)

        async with anyio.create_task_group() as tg:
            for i in range(first, min(first + 50, n)):
                tg.start_soon(one, i)
    created = time.perf_counter() - start
    first_walk, pages, seen = await walk(store, page)
    second_walk, _, _ = await walk(store, page)
    scans = store._core.index.scans if kind == "file" else None  # user-directory scans
    await store.aclose()
    fresh = make(kind, folder)  # a new instance (as a new process would): nothing cached
    fresh_walk, _, _ = await walk(fresh, page)
    await fresh.aclose()
    print(json.dumps({
        "store": kind, "sessions": n, "page": page, "create_s": round(created, 2),
        "list_s": round(first_walk, 3), "list_again_s": round(second_walk, 3),
        "list_fresh_s": round(fresh_walk, 3),
        "pages": pages, "seen": seen, "scans": scans,
    }))  # fmt: skip


if __name__ == "__main__":
    kind, folder = sys.argv[1], Path(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    page = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    folder.mkdir(parents=True, exist_ok=True)
    anyio.run(main, kind, folder, n, page)
