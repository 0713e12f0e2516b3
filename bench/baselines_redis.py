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
  * the floor of an EVENT_LOG W1 call (issue 21), the same client: the log's own acquire and
    4 fenced commits as bare EVALSHAs of the log's scripts with the bytes a real W1 call
    sent (captured from 3 calls of the bench's agent on the Redis log), interleaved with the
    LEGACY floor above and with a W1 call of the kernel alone (the memory store, LEGACY and
    EVENT_LOG): what ratio the floors allow once the kernel's cost is added
  * the store: one save appending 4 messages (1 EVALSHA), one warm load (1 EVALSHA), one
    cold load of the whole history (fresh store instance); its load + save also interleaved
    round by round with the floor's check + checked append (the messages of every cycle are
    built before the timing, as the floor's are encoded before it)
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
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from hookagent import AgentState, Msg
from hookagent.codec import encode_msg
from hookagent.messages import ToolUseBlock
from hookagent_store_redis import connect
from hookagent_store_redis import logscripts as ls
from hookagent_store_redis.testing import delete_prefix

sys.path.insert(0, str(Path(__file__).resolve().parent))


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


async def captured_w1(url: str, prefix: str) -> list[tuple[str, list[str], list[Any]]]:
    """The log scripts (name, keys, args) of a warm W1 call on the Redis log: the bench's
    agent makes 3 calls and the third one's acquire and commits are kept."""
    from bench_agent import one_call
    from session_log import config_for

    config = config_for("log", f"{url}?prefix={prefix}-cap")
    log = await (await config.kernel.store()).log()
    names = {ls.ACQUIRE.sha: "acquire", ls.COMMIT.sha: "commit"}
    sent: list[tuple[str, list[str], list[Any]]] = []
    real = log._send  # type: ignore[attr-defined]

    async def spy(script, keys, args, what, where, **kw):  # type: ignore[no-untyped-def]
        if script.sha in names:
            sent.append((names[script.sha], list(keys), list(args)))
        return await real(script, keys, args, what, where, **kw)

    log._send = spy  # type: ignore[attr-defined]
    for i in range(1, 4):
        sent.clear()
        await one_call(config, "bench", "floor", i)
    await delete_prefix(log.client, f"{prefix}-cap")  # type: ignore[attr-defined]
    await config.aclose()
    assert [s[0] for s in sent] == ["acquire"] + ["commit"] * 4, [s[0] for s in sent]
    return sent


def log_floor(r: Any, prefix: str, sent: list[tuple[str, list[str], list[Any]]]) -> Any:
    """One W1 call's log operations, bare: EVALSHA of the log's acquire and 4 commits with
    the captured bytes, on one session of its own (each call a new owner, as each W1 run
    is; the last commit finishes and seals it, as the captured one did)."""
    count = 0
    (_, akeys, aargs), commits = sent[0], sent[1:]
    base = akeys[0].rsplit(":log:", 1)[0]
    keys = [k.replace(base, f"{prefix}:{{floor}}") for k in akeys]
    ckeys = keys + [f"{prefix}:index"] * (len(commits[0][1]) - len(keys))

    async def call() -> None:
        nonlocal count
        count += 1
        owner = f"floor-run-{count}"
        res = await r.evalsha(ls.ACQUIRE.sha, len(keys), *keys, aargs[0], owner, aargs[2])
        epoch, seq = str(int(res[3])), int(res[2])
        for i, (_, _, args) in enumerate(commits):
            a = list(args)
            a[1], a[2], a[3], a[4] = epoch, owner, f"fb{count}-{i}", seq
            got = await r.evalsha(ls.COMMIT.sha, len(ckeys), *ckeys, *a)
            if got[0] != b"OK":
                raise RuntimeError(f"the floor's commit was refused: {got[0]!r}")
            seq += int(a[6])

    return call


async def interleaved(fns: dict[str, Any], n: int) -> dict[str, tuple[float, float]]:
    """Each function once per round, in turn: (median wall ms, median CPU ms) each."""
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(n):
        for k, fn in fns.items():
            c, t = time.process_time(), time.perf_counter()
            await fn()
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    med = statistics.median
    return {k: (med(wall[k]) * 1000, med(cpu[k]) * 1000) for k in fns}


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

        from bench_agent import one_call
        from session_log import config_for

        sent = await captured_w1(url, prefix)
        await r.script_load(ls.ACQUIRE.source)
        await r.script_load(ls.COMMIT.source)
        kernels = {
            "legacy": config_for("legacy", "memory"),
            "log": config_for("log", "memory://hab-floor"),
        }
        done = {m: 0 for m in kernels}

        def kernel_call(mode: str) -> Any:
            async def call() -> None:
                done[mode] += 1
                await one_call(kernels[mode], "bench", "floor", done[mode])

            return call

        for m in kernels:  # warm: the memory session at ~20 calls, as the W1 windows
            for _ in range(20):
                await kernel_call(m)()
        got = await interleaved(
            {
                "legacy_floor": check_append,
                "log_floor": log_floor(r, f"{prefix}:lf", sent),
                "kernel_legacy": kernel_call("legacy"),
                "kernel_log": kernel_call("log"),
            },
            n,
        )
        for config in kernels.values():
            await config.aclose()
        sizes = [len(a[-1]) for _, _, a in sent[1:]]

        await store.save_if_version("u", "s", state, 0)
        version = 1
        # the messages are built before the timing, as the floor's are encoded before it
        pending = iter([call_messages(0) for _ in range(2 * n)])

        async def save_append() -> None:
            nonlocal version
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            got.state.context.extend(next(pending))
            version = await store.save_if_version("u", "s", got.state, got.version)

        load_ms = await timed(lambda: store.get_versioned("u", "s"), n, "load")
        cycle_ms = await timed(save_append, n, "cycle")
        # the same two, a round each in turn: both see the same moments of a busy machine
        paired = await interleaved({"floor": check_append, "store": save_append}, n)

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
        (lw, lc), (ew, ec) = got["legacy_floor"], got["log_floor"]
        (kw, kc), (kgw, kgc) = got["kernel_legacy"], got["kernel_log"]
        print(
            f"interleaved x{n}: LEGACY floor (HGET + checked append) {lw:.3f} ms "
            f"(CPU {lc:.3f}); EVENT_LOG floor (acquire + 4 fenced commits, {sum(sizes)} B "
            f"of commits {sizes}) {ew:.3f} ms (CPU {ec:.3f}): {ew / lw:.2f}x wall, "
            f"{ec / lc:.2f}x CPU"
        )
        print(
            f"  a W1 call of the kernel on the memory store: LEGACY {kw:.3f} ms (CPU {kc:.3f}),"
            f" EVENT_LOG {kgw:.3f} ms (CPU {kgc:.3f})"
        )
        print(
            "  what the floors allow, (kernel + EVENT_LOG floor) / (kernel + LEGACY floor): "
            f"the kernel alone {(kw + ew) / (kw + lw):.2f}x wall, {(kc + ec) / (kc + lc):.2f}x "
            f"CPU; with the recorder (memory EVENT_LOG call) {(kgw + ew) / (kw + lw):.2f}x "
            f"wall, {(kgc + ec) / (kc + lc):.2f}x CPU (issue 21 asks <= 1.5x)"
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
        (fw, fc), (sw, sc) = paired["floor"], paired["store"]
        print(
            f"interleaved x{n}: floor {fw:.3f} ms (CPU {fc:.3f}), store load + save {sw:.3f} ms "
            f"(CPU {sc:.3f}): {sw / fw:.2f}x wall, {sc / fc:.2f}x CPU"
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
