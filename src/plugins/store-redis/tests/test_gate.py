"""The distributed session gate: exclusion, expiry and takeover (Fenced), release, FIFO."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
from hookagent import AgentState, Msg
from hookagent.errors import Fenced, SessionBusy
from hookagent.store import UNCONDITIONAL, Fence
from hookagent_store_redis import RedisAgentStateStore, RedisSessionGate
from hookagent_store_redis.testing import STANDALONE

pytestmark = pytest.mark.anyio
USER, SESSION = "lost-update-user", "one-slot"


async def test_exclusion_busy_and_release(standalone_store: RedisAgentStateStore) -> None:
    gate = RedisSessionGate(standalone_store, lease_ttl=5)
    async with gate.acquire("u", "s", timeout=1) as fence:
        assert isinstance(fence, Fence) and fence.epoch >= 1
        assert await gate.try_acquire("u", "s") is None
        started = time.monotonic()
        with pytest.raises(SessionBusy):
            async with gate.acquire("u", "s", timeout=0.2):
                pytest.fail("entered a held gate")
        assert 0.15 < time.monotonic() - started < 2
        async with gate.acquire("u", "other", timeout=0.2) as other:  # another session: free
            assert other.owner != fence.owner
    # released at exit: a new owner gets in at once with a higher epoch
    async with gate.acquire("u", "s", timeout=0) as second:
        assert second.epoch > fence.epoch
    # the waiter that timed out left the queue: nothing blocks a third owner
    third = await gate.try_acquire("u", "s", queue=True)
    assert third is not None and await gate.release("u", "s", third)
    assert not await gate.release("u", "s", third)  # releasing twice is refused


async def test_expiry_takeover_fences_the_stale_writer(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    gate = RedisSessionGate(store, lease_ttl=0.2, auto_renew=False)
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    old = await gate.try_acquire("u", "s")
    assert old is not None
    stale = await store.get_versioned("u", "s")  # the old holder loads, then stalls (GC pause)
    await asyncio.sleep(0.35)
    new = await gate.try_acquire("u", "s")  # the lease expired: taken over
    assert new is not None and new.epoch > old.epoch
    assert not await gate.renew("u", "s", old)
    # the stale holder cannot write even before the new owner has written anything
    assert stale.state is not None
    stale.state.context.append(Msg.user("stale write"))
    with pytest.raises(Fenced):
        await store.save_if_version("u", "s", stale.state, stale.version, fence=old)
    fresh = await store.get_versioned("u", "s")
    assert fresh.state is not None
    fresh.state.context.append(Msg.user("new owner"))
    await store.save_if_version("u", "s", fresh.state, fresh.version, fence=new)
    with pytest.raises(Fenced):  # still refused after the new owner wrote, at any version
        await store.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL, fence=old)
    # the same epoch presented by another owner (epoch re-issued after a failover) is refused
    with pytest.raises(Fenced):
        await store.save_if_version("u", "s", AgentState("s", "u"), 2, fence=Fence(new.epoch, "x"))
    assert not await gate.release("u", "s", old)
    got = await store.get_versioned("u", "s")
    assert got.version == 2 and [m.text for m in got.state.context] == ["new owner"]  # type: ignore[union-attr]


async def test_the_gates_epoch_presented_by_another_owner_is_fenced_before_any_save(
    standalone_store: RedisAgentStateStore,
) -> None:
    """The one fence rule against the epoch the gate handed out, not only a saved one."""
    store = standalone_store
    gate = RedisSessionGate(store, auto_renew=False)
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    held = await gate.try_acquire("u", "s")
    assert held is not None
    for expected in (1, UNCONDITIONAL):
        with pytest.raises(Fenced):  # same epoch, not the holder: refused, nothing written
            await store.save_if_version(
                "u", "s", AgentState("s", "u"), expected, fence=Fence(held.epoch, "x")
            )
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 1, fence=held) == 2
    newer = Fence(held.epoch + 1, "x")  # a newer epoch from elsewhere is taken and recorded
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 2, fence=newer) == 3
    with pytest.raises(Fenced):
        await store.save_if_version("u", "s", AgentState("s", "u"), 3, fence=held)
    assert await gate.release("u", "s", held)


async def test_renewal_keeps_the_lease(standalone_store: RedisAgentStateStore) -> None:
    gate = RedisSessionGate(standalone_store, lease_ttl=0.3)
    async with gate.acquire("u", "s", timeout=1) as fence:
        await asyncio.sleep(0.8)  # well past one ttl: renewed every 0.1 s
        assert await gate.try_acquire("u", "s") is None
        await standalone_store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=fence)


async def test_waiters_are_served_in_arrival_order(standalone_store: RedisAgentStateStore) -> None:
    gate = RedisSessionGate(standalone_store, lease_ttl=5, poll_max=0.01)
    order: list[int] = []
    async with gate.acquire("u", "s", timeout=1):

        async def waiter(i: int) -> None:
            async with gate.acquire("u", "s", timeout=10):
                order.append(i)
                await asyncio.sleep(0.01)

        tasks = []
        for i in range(6):
            tasks.append(asyncio.create_task(waiter(i)))
            await asyncio.sleep(0.03)  # each waiter has taken its ticket before the next
        await asyncio.sleep(0.05)
    await asyncio.gather(*tasks)
    assert order == list(range(6))


async def test_gate_rejects_bad_input(standalone_store: RedisAgentStateStore) -> None:
    from hookagent.errors import InvalidIdentifier, InvalidStoreArgument, StoreConfigurationError

    gate = RedisSessionGate(standalone_store)
    with pytest.raises(InvalidIdentifier):
        async with gate.acquire("u", "", timeout=1):
            pass
    for timeout in (-1, "x", float("nan"), True, [1]):
        with pytest.raises(InvalidStoreArgument, match="timeout"):
            async with gate.acquire("u", "s", timeout=timeout):  # type: ignore[arg-type]
                pass
    for fence in ("nofence", None, Fence(-1, "o"), Fence(1, 2)):  # type: ignore[arg-type]
        with pytest.raises(InvalidStoreArgument, match="fence"):
            await gate.release("u", "s", fence)  # type: ignore[arg-type]
        with pytest.raises(InvalidStoreArgument, match="fence"):
            await gate.renew("u", "s", fence)  # type: ignore[arg-type]
    for owner in (5, "", "\ud800", "a\x00b", "o" * 257):  # the kernel's check_owner
        with pytest.raises(InvalidStoreArgument, match="owner"):
            await gate.try_acquire("u", "s", owner)  # type: ignore[arg-type]
        if owner == "":  # a fence may carry "" (check_owner); the gate never hands it out
            assert not await gate.release("u", "s", Fence(1, owner))
            continue
        with pytest.raises(InvalidStoreArgument, match="owner"):
            await gate.release("u", "s", Fence(1, owner))  # type: ignore[arg-type]
        with pytest.raises(InvalidStoreArgument, match="owner"):
            await gate.renew("u", "s", Fence(1, owner))  # type: ignore[arg-type]
    bad_options: list[dict[str, Any]] = [
        {"lease_ttl": 0},
        {"lease_ttl": "x"},
        {"lease_ttl": float("inf")},
        {"lease_ttl": float("nan")},
        {"lease_ttl": 1e300},
        {"poll_initial": "0.1"},
        {"poll_max": None},
        {"waiter_window": True},
        {"poll_initial": 0.2, "poll_max": 0.1},
        {"poll_max": 3.0},  # not below waiter_window
        {"auto_renew": "yes"},
    ]
    for options in bad_options:
        with pytest.raises(StoreConfigurationError):
            RedisSessionGate(standalone_store, **options)
    # nothing above took the lease or queued; the longest owner an id may be works end to end
    longest = await gate.try_acquire("u", "s", "o" * 256)
    assert longest is not None
    await standalone_store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=longest)
    assert await gate.release("u", "s", longest)


async def test_damaged_gate_counters_fail_closed(standalone_store: RedisAgentStateStore) -> None:
    """A garbage epoch read as 0 could hand out an epoch twice: CorruptState, no lease taken."""
    from hookagent.errors import CorruptState

    gate = RedisSessionGate(standalone_store)
    sk = standalone_store.layout.session("u", "s")
    for field in ("ge", "fe", "qt"):
        await standalone_store.client.delete(sk.meta)
        await standalone_store.client.hset(sk.meta, field, "garbage")
        with pytest.raises(CorruptState, match="gate counters"):
            await gate.try_acquire("u", "s", queue=True)
        assert not await standalone_store.client.exists(sk.lease, sk.queue)
    # a waiter whose deadline is damaged loses its place instead of breaking the script
    await standalone_store.client.delete(sk.meta)
    await standalone_store.client.zadd(sk.queue, {"ghost": 1})
    await standalone_store.client.hset(sk.queue_deadlines, "ghost", "garbage")
    assert await gate.try_acquire("u", "s") is not None


async def test_the_gate_never_hands_out_epoch_2_53(standalone_store: RedisAgentStateStore) -> None:
    """Fence epochs stay below 2**53: at the limit the gate refuses, writing nothing, instead of
    storing ge = 2**53 (which every later save and acquire would read as damage)."""
    from hookagent_store_redis import FenceEpochsExhausted

    store, client = standalone_store, standalone_store.client
    gate = RedisSessionGate(store, lease_ttl=5)
    sk = store.layout.session("u", "s")
    v = await store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=Fence(2**53 - 2, "x"))
    last = await gate.try_acquire("u", "s")  # the last epoch there is
    assert last is not None and last.epoch == 2**53 - 1
    v = await store.save_if_version("u", "s", AgentState("s", "u"), v, fence=last)
    assert await gate.release("u", "s", last)
    await client.zadd(sk.queue, {"waiter": 1})
    await client.hset(sk.queue_deadlines, "waiter", 0)  # expired: acquire would drop it
    before = await client.hgetall(sk.meta)
    with pytest.raises(FenceEpochsExhausted, match=r"session_id='s'.*9007199254740991") as info:
        await gate.try_acquire("u", "s", queue=True)
    assert info.value.meta_key == sk.meta and info.value.newest == 2**53 - 1
    with pytest.raises(FenceEpochsExhausted):
        async with gate.acquire("u", "s", timeout=1):
            pytest.fail("entered a gate with no epoch left")
    assert await client.hgetall(sk.meta) == before and not await client.exists(sk.lease)
    assert await client.zrange(sk.queue, 0, -1) == [b"waiter"]  # not even the clean-up ran
    # the session stays usable: saves without a fence, or with the last fence, still work
    v = await store.save_if_version("u", "s", AgentState("s", "u"), v)
    v = await store.save_if_version("u", "s", AgentState("s", "u"), v, fence=last)
    assert (await store.get_versioned("u", "s")).version == v == 4
    # the documented way out, once no holder is live
    await client.hdel(sk.meta, "ge", "fe", "fo")
    again = await gate.try_acquire("u", "s")
    assert again is not None and again.epoch == 1


def _check_serial_history(texts: list[str], inputs: list[str]) -> None:
    assert len(texts) == 2 * len(inputs)
    assert Counter(texts[0::2]) == Counter(inputs), "an input is lost or doubled"
    for user, reply in zip(texts[0::2], texts[1::2], strict=True):
        assert reply == f"reply to {user}", "two calls interleaved"


async def test_two_processes_24_gated_calls_on_one_session(
    standalone_store: RedisAgentStateStore, run_workers: Any
) -> None:
    """Simulated calls: acquire, load, append input and reply, save with the fence, release."""
    results = run_workers("gate", STANDALONE, standalone_store.prefix, 2, 12)
    inputs = [t for r in results for t in r["inputs"]]
    got = await standalone_store.get_versioned(USER, SESSION)
    assert got.state is not None and got.version == 24
    _check_serial_history([m.text for m in got.state.context], inputs)


async def test_two_processes_24_agent_calls_with_the_gate(
    standalone_store: RedisAgentStateStore, run_workers: Any
) -> None:
    """The kernel's agent with ``AgentConfig(session_gate=RedisSessionGate(store))``."""
    results = run_workers("agent", STANDALONE, standalone_store.prefix, 2, 12)
    inputs = [t for r in results for t in r["inputs"]]
    got = await standalone_store.get_versioned(USER, SESSION)
    assert got.state is not None
    texts = [m.text for m in got.state.context if m.role in ("user", "assistant")]
    _check_serial_history(texts, inputs)


async def test_exit_returns_when_a_renewal_turns_its_cancellation_into_an_error(
    standalone_store: RedisAgentStateStore,
) -> None:
    """A renewal in flight when the block exits is cancelled; if the driver reports that
    cancellation as an error (a timeout racing it), the renewer must still stop."""
    from hookagent.errors import StoreUnavailable

    gate = RedisSessionGate(standalone_store, lease_ttl=0.3)
    inside = asyncio.Event()

    async def renewal_that_converts(*args: object) -> bool:
        inside.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise StoreUnavailable("redis is unreachable during gate renew") from None
        return True

    gate.renew = renewal_that_converts  # type: ignore[method-assign]

    async def hold() -> None:
        async with gate.acquire("u", "s", timeout=1):
            await inside.wait()

    task = asyncio.create_task(hold())
    await asyncio.wait({task}, timeout=5)  # not wait_for: its cancel would wait forever too
    assert task.done(), "the block's exit is still waiting for its renewer"
    await task
