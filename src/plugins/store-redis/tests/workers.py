"""Worker processes for the multi-process tests (run as a script, prints one JSON line).

python workers.py cas URL PREFIX WORKER ATTEMPTS       compare-and-set appends of tokens
python workers.py naive URL PREFIX WORKER ATTEMPTS     GET/SET read-modify-write (control)
python workers.py gate URL PREFIX WORKER CALLS         gated calls (load, append 2, save)
python workers.py agent URL PREFIX WORKER CALLS        the kernel agent with the Redis gate
python workers.py log URL PREFIX WORKER TENURES        session-log writers taking turns
"""

from __future__ import annotations

import asyncio
import json
import sys

from hookagent import AgentState, Msg
from hookagent.errors import VersionConflict
from hookagent_store_redis import RedisSessionGate, connect
from redis.asyncio import Redis

USER, SESSION = "lost-update-user", "one-slot"


async def cas(url: str, prefix: str, worker: int, attempts: int) -> dict[str, object]:
    store = connect(url, prefix=prefix)
    acked: list[list[object]] = []
    conflicts = 0
    try:
        for i in range(attempts):
            token = f"{worker}-{i}"
            got = await store.get_versioned(USER, SESSION)
            assert got.state is not None
            got.state.context.append(Msg.user(token))
            try:
                version = await store.save_if_version(USER, SESSION, got.state, got.version)
            except VersionConflict:
                conflicts += 1
                continue
            acked.append([token, version])
    finally:
        await store.aclose()
    return {"acked": acked, "conflicts": conflicts}


async def naive(url: str, prefix: str, worker: int, attempts: int) -> dict[str, object]:
    r = Redis.from_url(url)
    key = f"{prefix}:naive"
    acked = []
    try:
        for i in range(attempts):
            token = f"{worker}-{i}"
            raw = await r.get(key)
            items = json.loads(raw) if raw else []
            items.append(token)
            await r.set(key, json.dumps(items))
            acked.append(token)
    finally:
        await r.aclose()
    return {"acked": acked}


async def gated(url: str, prefix: str, worker: int, calls: int) -> dict[str, object]:
    store = connect(url, prefix=prefix)
    gate = RedisSessionGate(store, lease_ttl=10)

    async def call(i: int) -> str:
        text = f"in-{worker}-{i}"
        async with gate.acquire(USER, SESSION, timeout=60) as fence:
            got = await store.get_versioned(USER, SESSION)
            state = got.state or AgentState(SESSION, USER)
            state.context.append(Msg.user(text))
            await asyncio.sleep(0.002)  # work inside the critical section
            state.context.append(Msg.assistant(f"reply to {text}"))
            await store.save_if_version(USER, SESSION, state, got.version, fence=fence)
        return text

    try:
        done = await asyncio.gather(*(call(i) for i in range(calls)))
    finally:
        await store.aclose()
    return {"inputs": list(done)}


async def agent_calls(url: str, prefix: str, worker: int, calls: int) -> dict[str, object]:
    from hookagent import AgentConfig, RuntimeContext
    from hookagent.testing.scripted import ScriptedModel

    store = connect(url, prefix=prefix)
    gate = RedisSessionGate(store, lease_ttl=10)

    def echo(request: object) -> str:
        last = [m for m in request.messages if m.role == "user"][-1]  # type: ignore[attr-defined]
        return f"reply to {last.text}"

    config = AgentConfig(
        name="gated",
        model=ScriptedModel(default=echo),
        state_store=store,
        session_gate=gate,
        gate_timeout=60,
        autoload_plugins=False,
    )

    async def call(i: int) -> str:
        text = f"in-{worker}-{i}"
        async with config.build() as agent:
            reply = await agent.call(text, RuntimeContext(user_id=USER, session_id=SESSION))
        assert reply.text == f"reply to {text}", reply
        return text

    try:
        done = await asyncio.gather(*(call(i) for i in range(calls)))
    finally:
        await store.aclose()
    return {"inputs": list(done)}


async def log_writer(url: str, prefix: str, worker: int, tenures: int) -> dict[str, object]:
    """Acquire the session's log lease (0.25 s), commit six batches of two events, pausing
    0.35 s after the third (past the lease: the other worker may take over, and then this
    one's next commit must be refused), release. Reports every acknowledged commit."""
    from hookagent.errors import LeaseHeld, LogFenced
    from hookagent.sessionlog import LogEvent
    from hookagent_store_redis import connect_log

    log = connect_log(url, prefix=prefix)
    acked: list[list[object]] = []
    fenced = held = 0
    try:
        for t in range(tenures):
            owner = f"w{worker}-{t}"
            while True:
                try:
                    writer = await log.acquire(USER, SESSION, owner, 0.25)
                    break
                except LeaseHeld:
                    held += 1
                    await asyncio.sleep(0.005)
            seq = writer.seq
            for i in range(6):
                if i == 3:
                    await asyncio.sleep(0.35)
                bid = f"{owner}-{i}"
                events = [LogEvent("message/appended", {"token": f"{bid}/{k}"}) for k in (0, 1)]
                try:
                    done = await log.commit(writer, bid, seq, events)
                except LogFenced:
                    fenced += 1
                    break
                acked.append([bid, done.first_seq, done.last_seq])
                seq = done.last_seq
            else:
                await log.release(writer)
    finally:
        await log.aclose()
    return {"acked": acked, "fenced": fenced, "held": held}


MODES = {"cas": cas, "naive": naive, "gate": gated, "agent": agent_calls, "log": log_writer}

if __name__ == "__main__":
    mode, url, prefix, worker, n = sys.argv[1:6]
    # Start together: a process's start (imports) can outlast another's whole run on a
    # loaded machine, and then nothing contends. The parent answers "go" once all are ready.
    print("ready", flush=True)
    sys.stdin.readline()
    out = asyncio.run(MODES[mode](url, prefix, int(worker), int(n)))
    print(json.dumps(out))
