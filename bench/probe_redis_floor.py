"""The Redis store's warm call against the floor of a correct warm call, for callgrind.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
        .venv/bin/python bench/probe_redis_floor.py --which store --n 250

Either ``--which floor``: the floor ``bench/baselines_redis.py`` times, statement for
statement (``HGET`` of the head's version, then one ``EVALSHA`` of its checked append with
the 4 messages encoded once), on the store's own redis-py client; or ``--which store``: the
store's load + save cycle (``get_versioned`` that finds nothing changed, 4 messages
appended, ``save_if_version``) as its ``save_append`` does. A slot of 4,000 messages,
``--warm`` cycles first, then ``--n`` cycles. Run it with two values of ``--n`` in fresh
processes: (Ir(n2) - Ir(n1)) / (n2 - n1) is the instructions per call (set-up cancels
out). The messages of every cycle are built before the first, so building them cancels out
too. ``--count`` prints the commands per cycle the server counted (``INFO commandstats``
deltas over the ``--n`` cycles); ``--no-wire`` sends the store's scripts through redis-py's
command layer (the path a cluster client takes). Keys under ``--prefix``, deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from baselines_redis import CHECKED_APPEND, call_messages  # noqa: E402
from hookagent import AgentState  # noqa: E402
from hookagent.codec import encode_msg  # noqa: E402
from hookagent_store_redis import connect  # noqa: E402
from hookagent_store_redis.testing import delete_prefix  # noqa: E402

HISTORY = 1000  # calls of 4 messages: 4,000 messages


async def stats(r) -> dict[str, int]:  # type: ignore[no-untyped-def]
    info = await r.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


async def main(
    url: str, which: str, n: int, warm: int, prefix: str, count: bool, no_wire: bool
) -> None:
    store = connect(url, prefix=prefix)
    if no_wire:  # redis-py's path, as a cluster client takes (attribution)
        store._wire = None
    r = store.client
    try:
        state = AgentState("s", "u")
        for i in range(HISTORY):
            state.context.extend(call_messages(i))
        batches = [call_messages(HISTORY + i) for i in range(warm + n)]
        if which == "floor":
            head, lst = f"{prefix}:fh", f"{prefix}:fm"
            await r.hset(head, "v", 1)
            await r.rpush(lst, *[encode_msg(m) for m in state.context])
            sha = await r.script_load(CHECKED_APPEND)
            four = [encode_msg(m) for m in call_messages(HISTORY)]

            async def cycle(_: int) -> None:
                seen = await r.hget(head, "v")
                if await r.evalsha(sha, 2, head, lst, seen, *four) < 0:
                    raise RuntimeError("the floor's checked append lost its version")

        else:
            await store.save_if_version("u", "s", state, 0)

            async def cycle(i: int) -> None:
                got = await store.get_versioned("u", "s")
                assert got.state is not None
                got.state.context.extend(batches[i])
                await store.save_if_version("u", "s", got.state, got.version)

        for i in range(warm):
            await cycle(i)
        before = await stats(r) if count else {}
        for i in range(warm, warm + n):
            await cycle(i)
        if count:
            after = await stats(r)
            per = {k: (v - before.get(k, 0)) / n for k, v in after.items()}
            print({k: v for k, v in per.items() if v and k != "info"})
    finally:
        await delete_prefix(r, prefix)
        await store.aclose()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379/13")
    ap.add_argument("--which", choices=("floor", "store"), required=True)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--prefix", default="redisline-probe")
    ap.add_argument("--count", action="store_true")
    ap.add_argument("--no-wire", action="store_true", help="the store on redis-py's path")
    a = ap.parse_args()
    asyncio.run(main(a.url, a.which, a.n, a.warm, a.prefix, a.count, a.no_wire))
