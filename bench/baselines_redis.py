"""Physical limits of Redis on this machine, next to what the Redis store does per call.

    .venv/bin/python bench/baselines_redis.py [--url redis://127.0.0.1:6379/0] [--n 200]

Prints, as medians over --n repetitions, for a 1,000-call (4,000-message) history shaped like
the standard workload (bench/workload.md):
  * SET of the full state as one JSON document (what a full-rewrite design pays per call)
  * RPUSH of 4 encoded messages (what an append design pays per call)
  * the floor of a correct warm call, no framework, the same client (redis-py asyncio):
    the version check (HGET of the head's version) and a checked append (one EVALSHA:
    compare the version, RPUSH the 4 messages, bump it): two round trips, as the store's
    call makes (docs/stores/redis.md, "What a call costs", says why two)
  * the store: one save appending 4 messages (1 EVALSHA), one warm load (1 EVALSHA), one
    cold load of the whole history (fresh store instance)
  * bytes held by the store's keys (MEMORY USAGE) against the raw encoded messages
and the raw `redis-benchmark -q -t set,get -n 20000` figure. Each timed figure carries the
client CPU per repetition (``time.process_time``, median) beside the wall time, and the
store's load + save is set against both floors (wall and CPU). Keys use a unique prefix and
are deleted at the end. Not a test: the machine is shared and noisy, compare ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import time
import uuid

import orjson
from hookagent import AgentState, Msg
from hookagent.codec import encode_msg
from hookagent.messages import ToolUseBlock
from hookagent_store_redis import connect
from hookagent_store_redis.testing import delete_prefix


def call_messages(i: int) -> list[Msg]:
    tool = Msg("tool", "r" * 200)
    call = Msg.assistant([ToolUseBlock(f"call_{i:012d}", "lookup", {"key": i})])
    return [Msg.user(f"question {i}"), call, tool, Msg.assistant("a" * 200)]


# The floor's save: compare the head's version, append, bump it (the store's save script
# does the same and more: fence, lineage, hash chain, TTL, index).
CHECKED_APPEND = """
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return -1 end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 2))
return redis.call('HINCRBY', KEYS[1], 'v', 1)
"""
CPU: dict[str, float] = {}
"""Client CPU (ms, median) per repetition of the last ``timed`` call of each label."""


async def timed(fn, n: int, label: str = "") -> float:  # type: ignore[no-untyped-def]
    samples, cpu = [], []
    for _ in range(n):
        c, t = time.process_time(), time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    if label:
        CPU[label] = statistics.median(cpu) * 1000
    return statistics.median(samples) * 1000


async def main(url: str, n: int, calls: int) -> None:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    store = connect(url, prefix=prefix)
    r = store.client
    try:
        state = AgentState("s", "u")
        for i in range(calls):
            state.context.extend(call_messages(i))
        encoded = [encode_msg(m) for m in state.context]
        raw_bytes = sum(len(e) for e in encoded)
        full_doc = orjson.dumps([orjson.loads(e) for e in encoded])
        four = [encode_msg(m) for m in call_messages(calls)]

        set_ms = await timed(lambda: r.set(f"{prefix}:full", full_doc), n)
        push_key = f"{prefix}:push"
        rpush_ms = await timed(lambda: r.rpush(push_key, *four), n, "rpush")

        floor_head, floor_list = f"{prefix}:fh", f"{prefix}:fm"
        await r.hset(floor_head, "v", 1)
        sha = await r.script_load(CHECKED_APPEND)

        async def check_only() -> None:
            await r.hget(floor_head, "v")

        async def check_append() -> None:
            seen = await r.hget(floor_head, "v")
            if await r.evalsha(sha, 2, floor_head, floor_list, seen, *four) < 0:
                raise RuntimeError("the floor's checked append lost its version")

        check_ms = await timed(check_only, n, "check")
        floor_ms = await timed(check_append, n, "floor")

        await store.save_if_version("u", "s", state, 0)
        version = 1

        async def save_append() -> None:
            nonlocal version
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            got.state.context.extend(call_messages(0))
            version = await store.save_if_version("u", "s", got.state, got.version)

        load_ms = await timed(lambda: store.get_versioned("u", "s"), n, "load")
        cycle_ms = await timed(save_append, n, "cycle")

        async def cold() -> None:
            fresh = connect(url, prefix=prefix)
            await fresh.get_versioned("u", "s")
            await fresh.aclose()

        cold_ms = await timed(cold, max(5, n // 20))
        sk = store.layout.session("u", "s")
        held = 0
        for k in (sk.head("agent_state"), sk.messages("agent_state"), sk.keyset, sk.meta):
            held += await r.memory_usage(k) or 0
        count = len(state.context) + 4 * n
        raw_now = raw_bytes + sum(len(e) for e in four) * n
        print(f"history: {len(state.context)} messages, {raw_bytes} bytes encoded")
        print(f"SET full state ({len(full_doc)} B): {set_ms:.3f} ms median")
        c = CPU
        print(f"RPUSH 4 messages:             {rpush_ms:.3f} ms median (CPU {c['rpush']:.3f})")
        print(f"floor: version check (HGET):  {check_ms:.3f} ms median (CPU {c['check']:.3f})")
        print(
            f"floor: check + checked append: {floor_ms:.3f} ms median (CPU {c['floor']:.3f}; "
            "2 round trips, no framework)"
        )
        print(f"store warm load (1 EVALSHA):  {load_ms:.3f} ms median (CPU {c['load']:.3f})")
        print(
            f"store load + append-4 save:   {cycle_ms:.3f} ms median (CPU {c['cycle']:.3f}; "
            "2 round trips)"
        )
        print(
            f"store load + save over the floors: {cycle_ms / rpush_ms:.2f}x RPUSH, "
            f"{cycle_ms / floor_ms:.2f}x check + append (CPU {c['cycle'] / c['rpush']:.2f}x, "
            f"{c['cycle'] / c['floor']:.2f}x)"
        )
        print(f"store cold load:              {cold_ms:.3f} ms median ({len(state.context)} msgs)")
        print(
            f"bytes held: {held} for {count} messages = {held / raw_now:.2f}x the raw "
            f"encoded messages ({raw_now} B)"
        )
    finally:
        await delete_prefix(r, prefix)
        await store.aclose()
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    out = subprocess.run(
        ["redis-benchmark", "-h", host, "-p", port or "6379", "-q", "-t", "set,get", "-n", "20000"],
        capture_output=True,
        text=True,
        check=False,
    )
    finals = re.findall(
        r"(SET|GET): ([0-9.]+) requests per second(?:, p50=([0-9.]+) msec)?", out.stdout
    )
    print(
        "redis-benchmark -q -t set,get -n 20000:",
        "; ".join(f"{c} {rps} req/s (p50 {p50 or '?'} ms)" for c, rps, p50 in finals)
        or out.stdout.strip()[-200:],
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--calls", type=int, default=1000)
    a = ap.parse_args()
    asyncio.run(main(a.url, a.n, a.calls))
