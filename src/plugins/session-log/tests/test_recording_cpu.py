"""What the recorder does per W1 call besides its I/O (issue 21, session 9), counted: no
trip through the event loop for a free lock, no coroutine for a run event that is not a
run's end, one lookup for a run's recording, no throwaway objects in the memory log."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hookagent import AgentState
from hookagent.events import RunEvent
from hookagent.sessionlog import InMemorySessionLog, LogHead, memory
from hookagent.sessionlog.rules import plan_acquire, plan_commit
from hookagent.testing import ScriptedModel, tool_call
from hookagent_session_log import plugin
from hookagent_session_log import recording as recording_mod
from hookagent_session_log import store as store_mod
from hookagent_session_log.projection import Projection
from sessionlog_support import ctx, make_config

pytestmark = pytest.mark.anyio


def w1_model(calls: int) -> ScriptedModel:
    script: list[Any] = []
    for i in range(calls):
        script += [tool_call("lookup", key=i), f"found v{i}"]
    return ScriptedModel(script)


async def test_a_flush_does_not_yield_to_the_event_loop_when_its_lock_is_free() -> None:
    log = InMemorySessionLog()  # its commit never suspends: a yield would be the lock's
    writer = await log.acquire("u", "s", "run-1", 60)
    rec = recording_mod.Recording(log, writer, Projection("u", "s"), 60.0, run_id="run-1")
    state = AgentState(session_id="s", user_id="u")
    ran: list[int] = []

    async def other() -> None:  # runs at this task's first trip through the loop
        ran.append(1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        for _ in range(4):
            await rec.flush(state, [rec.fact("model/dispatch", {})])
        assert ran == []
    assert ran == [1]
    assert rec.seq == 5  # the four commits (the first with its checkpoint)


def test_a_run_event_that_is_not_an_end_makes_no_coroutine() -> None:
    def event(kind: str) -> RunEvent:
        return RunEvent(kind, "a", "u", "s", "run-1", 0, {})

    for kind in ("run_started", "model_request", "tool_started", "state_persisted"):
        assert plugin.hookagent_on_run_event(event(kind)) is None
    end = plugin.hookagent_on_run_event(event("run_failed"))
    assert end is not None
    end.close()  # type: ignore[attr-defined]  # (a coroutine, not awaited here)


async def test_a_run_finds_its_recording_in_one_lookup_and_none_once_it_ended() -> None:
    log = InMemorySessionLog()
    agent = make_config(log, w1_model(3)).build()
    seen: list[Any] = []
    real = plugin._recording

    def spy(c: Any) -> Any:
        rec = real(c)
        seen.append((rec, dict(store_mod.LIVE)))
        return rec

    plugin._recording = spy  # type: ignore[assignment]
    try:
        for i in range(3):
            await agent.call(f"look up {i}", ctx())
    finally:
        plugin._recording = real
    assert seen and all(rec is not None for rec, _ in seen)
    for rec, live in seen:  # each middleware's lookup was the live map's entry
        assert live[("u", "s", rec.run_id)] is rec
    assert not [k for k in store_mod.LIVE if k[:2] == ("u", "s")]  # every run ended: none left
    store = await agent.kernel.store()
    assert not store.recordings  # type: ignore[attr-defined]


async def test_a_failed_run_leaves_no_live_recording() -> None:
    class Boom(Exception):
        pass

    log = InMemorySessionLog()

    class Failing(InMemorySessionLog):
        async def commit(self, *a: Any, **kw: Any) -> Any:
            if kw.get("finish"):
                raise Boom("the final commit fails")
            return await super().commit(*a, **kw)

    failing = Failing()
    failing._sessions, failing._lock = log._sessions, log._lock
    agent = make_config(failing, w1_model(1)).build()
    with pytest.raises(Boom):
        await agent.call("look up 0", ctx(session="f"))
    assert not [k for k in store_mod.LIVE if k[:2] == ("u", "f")]
    assert (await log.head("u", "f")).owner is None  # the lease was given back
    assert (await agent.kernel.store()).recordings == {}  # type: ignore[attr-defined]


async def test_a_recording_replaced_on_its_slot_is_no_longer_found() -> None:
    log = InMemorySessionLog()
    store = store_mod.LogBackedStore(log)
    state = AgentState(session_id="r", user_id="u")
    writer = await log.acquire("u", "r", "run-a", 60)
    old = recording_mod.Recording(log, writer, Projection("u", "r"), 60.0, run_id="run-a")
    old.state = state
    store.attach(("u", "r"), old)
    new = recording_mod.Recording(log, writer, Projection("u", "r"), 60.0, run_id="run-b")
    store.attach(("u", "r"), new)
    assert ("u", "r", "run-a") not in store_mod.LIVE
    assert store_mod.LIVE[("u", "r", "run-b")] is new
    assert plugin._recording(ctx(session="r", run_id="run-a", agent_state=state)) is None
    store.detach(("u", "r"))
    assert ("u", "r", "run-b") not in store_mod.LIVE


async def test_the_memory_log_makes_no_session_record_for_a_session_it_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = [0]
    real = memory._Session

    def counting(*a: Any, **kw: Any) -> Any:
        made[0] += 1
        return real(*a, **kw)

    monkeypatch.setattr(memory, "_Session", counting)
    log = InMemorySessionLog()
    agent = make_config(log, w1_model(4)).build()
    await agent.call("look up 0", ctx())
    assert made[0] == 1  # the session's first acquire
    for i in range(1, 4):
        await agent.call(f"look up {i}", ctx())
    assert made[0] == 1  # acquires and commits of a known session build none


def test_the_plans_heads_are_what_evolve_gave() -> None:
    import attrs
    from hookagent.sessionlog import LogWriter

    head = LogHead(7, 3, "run-1", 100.0, "c7", 5)
    got = plan_acquire(head, "u", "s", "run-2", 200.0, 60.0, sealed=False)
    assert got == attrs.evolve(head, epoch=4, owner="run-2", lease_until=260.0)
    writer = LogWriter("u", "s", "run-1", 3, 100.0, 7)
    for finish in (False, True):
        plan = plan_commit(head, writer, "b8", 7, [], b"x", "d", 50.0, prior=None, finish=finish)
        want = attrs.evolve(head, seq=7, commit_id="b8", checkpoint_seq=5)
        if finish:
            want = attrs.evolve(want, owner=None, lease_until=0.0)
        assert plan.head == want
        assert plan.seal == ("run-1" if finish else None)


def test_scalar_payload_values_skip_the_depth_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    from hookagent.sessionlog import batch as batch_mod
    from hookagent.sessionlog import encode_batch
    from hookagent.sessionlog.batch import built_batch

    walked: list[Any] = []
    real = batch_mod.check_depth  # type: ignore[attr-defined]

    def counting(value: Any, *a: Any, **kw: Any) -> None:
        walked.append(value)
        real(value, *a, **kw)

    monkeypatch.setattr(batch_mod, "check_depth", counting)
    fact = recording_mod.fact
    events = [
        fact("model/dispatch", {"purpose": "reasoning", "messages": 5}, "r", "t"),
        fact("run/finished", {"outcome": "success", "completed": True, "x": None}, "r", "t"),
        fact("acme/x", {"n": 1.5, "nested": {"a": [1]}}, "r", "t"),
    ]
    built = built_batch(events)
    assert walked == [{"a": [1]}]  # only the container is walked
    assert built.data == encode_batch(events)
