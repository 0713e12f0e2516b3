"""What one warm call makes besides its messages: counted, never timed.

Each count is of something a call paid per call before it was cut (bench/notes/kernel.md):
cancel scopes entered, anyio backend lookups, event-loop rounds, run events made when nobody
reads them, attrs' per-assignment hooks. A change that brings one back fails here.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import anyio
import anyio._backends._asyncio as anyio_asyncio
import anyio._core._eventloop as anyio_eventloop
import pytest
from hookagent import (
    AgentConfig,
    AgentState,
    InMemoryAgentStateStore,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    TextBlock,
    ToolUseBlock,
)
from hookagent import events as events_module
from hookagent.errors import InvalidIdentifier
from hookagent.history import History
from hookagent.runs import AgentRun
from hookagent.store import ids
from hookagent.turns import GenerateReason

pytestmark = pytest.mark.anyio
USER, SESSION = "u", "s"


class LookupModel:
    """After a user message, one tool call; after its result, the final text."""

    name = "lookup-model"

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        if request.messages[-1].role == "user":
            return ModelResponse(Msg.assistant([ToolUseBlock("c1", "lookup", {"key": 1})]))
        return ModelResponse(Msg.assistant([TextBlock("done")]))


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"v{key}"


def config() -> AgentConfig:
    return AgentConfig(
        model=LookupModel(),
        tools=[lookup],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )


class Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scopes = self.lookups = self.rounds = self.events = 0
        scope_enter = anyio_asyncio.CancelScope.__enter__
        lookup_backend = anyio_eventloop.current_async_library
        loop_type = type(asyncio.get_running_loop())
        run_once = loop_type._run_once  # type: ignore[attr-defined]
        event_init = events_module.RunEvent.__init__

        def entered(scope: Any) -> Any:
            self.scopes += 1
            return scope_enter(scope)

        def looked_up() -> Any:
            self.lookups += 1
            return lookup_backend()

        def one_round(loop: Any) -> Any:
            self.rounds += 1
            return run_once(loop)

        def made(event: Any, *args: Any, **kw: Any) -> None:
            self.events += 1
            event_init(event, *args, **kw)

        monkeypatch.setattr(anyio_asyncio.CancelScope, "__enter__", entered)
        monkeypatch.setattr(anyio_eventloop, "current_async_library", looked_up)
        monkeypatch.setattr(loop_type, "_run_once", one_round)
        monkeypatch.setattr(events_module.RunEvent, "__init__", made)

    def reset(self) -> None:
        self.scopes = self.lookups = self.rounds = self.events = 0


async def warm_call_counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    cfg = config()
    async with cfg.build() as agent:  # the first call opens the store, fills caches
        await agent.call("first", RuntimeContext(user_id=USER, session_id=SESSION))
    counts = Counts(monkeypatch)
    async with cfg.build() as agent:
        await agent.call("second", RuntimeContext(user_id=USER, session_id=SESSION))
    return counts


async def test_a_warm_call_enters_six_cancel_scopes_and_looks_the_backend_up_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = await warm_call_counts(monkeypatch)
    # 3 steps (two model calls, one tool), the run's scope, the agent's task group, and the
    # task group's exit checkpoint's; one loop round (that checkpoint)
    assert counts.scopes == 6
    # the agent's task group and the free gate's lock: the run's scope is made from the
    # task group's own scope class, a step's from the run scope's (no backend lookup)
    assert counts.lookups == 2
    assert counts.rounds == 1


async def test_nobody_observing_no_run_event_is_made_and_events_still_reads_them_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = await warm_call_counts(monkeypatch)
    assert counts.events == 0  # ten recorded, none made: nobody read them
    cfg = config()
    async with cfg.build() as agent:
        run = agent.prepare_call("hello", RuntimeContext(user_id=USER, session_id=SESSION))
        await run.result()
        counts.reset()
        got = [e async for e in run.events()]
    assert counts.events == len(got) == 10  # made when read, once each
    assert [e.kind for e in got] == [
        "run_started",
        "state_loaded",
        "model_requested",
        "model_responded",
        "tool_called",
        "tool_returned",
        "model_requested",
        "model_responded",
        "state_persisted",
        "run_finished",
    ]
    assert [e.seq for e in got] == list(range(10))
    assert {(e.agent_id, e.user_id, e.session_id, e.run_id) for e in got} == {
        (cfg.id, USER, SESSION, run.run_id)
    }
    assert len({e.turn_id for e in got}) == 1 and got[0].turn_id == run.turn_id
    assert all(a.timestamp <= b.timestamp for a, b in itertools.pairwise(got))
    assert got[-1].data["outcome"] == GenerateReason.COMPLETED.value


async def test_events_read_during_the_run_are_the_ones_read_after_it() -> None:
    cfg = config()
    seen: list[Any] = []
    async with cfg.build() as agent:
        run = agent.prepare_call("hello", RuntimeContext(user_id=USER, session_id=SESSION))

        async def follow() -> None:
            seen.extend([e async for e in run.events()])

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await anyio.sleep(0)  # subscribed before the run starts
            await run.result()
    assert seen[0].kind == "run_started" and seen[-1].kind == "run_finished"
    assert [e.seq for e in seen] == list(range(len(seen))) and len(seen) == 10
    assert isinstance(run, AgentRun)


def test_assignment_converts_without_attrs_hooks_and_construction_skips_setattr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = [0]
    for cls in (AgentState, RuntimeContext):
        own = cls.__setattr__

        def counting(self: Any, name: str, value: Any, own: Any = own) -> None:
            calls[0] += 1
            own(self, name, value)

        monkeypatch.setattr(cls, "__setattr__", counting)
    state, ctx = AgentState("s", "u"), RuntimeContext()
    assert calls[0] == 0  # attrs' __init__ sets every field directly
    state.context = [Msg.user("a")]  # type: ignore[assignment]
    assert type(state.context) is History and len(state.context) == 1
    old = ctx.run_id
    ctx.run_id = None  # type: ignore[assignment]
    assert isinstance(ctx.run_id, str) and ctx.run_id and ctx.run_id != old
    ctx.turn_id = "t"
    assert calls[0] == 3 and ctx.turn_id == "t"


def test_a_checked_id_is_remembered_and_a_bad_one_is_still_refused() -> None:
    ids._CHECKED.clear()
    assert ids.check_id("sess-1") == "sess-1"
    assert "sess-1" in ids._CHECKED
    assert ids.check_id("sess-1", "user_id") == "sess-1"

    class Sneaky(str):
        pass

    ids.check_id(Sneaky("sess-2"))
    assert "sess-2" not in ids._CHECKED  # only exact str values are remembered
    ids.check_id("", "user_id", allow_empty=True)
    assert "" not in ids._CHECKED  # emptiness depends on the caller: never remembered
    with pytest.raises(InvalidIdentifier):
        ids.check_id("")
    with pytest.raises(InvalidIdentifier):
        ids.check_id("a\x00b")
    for n in range(ids._CHECKED_MAX + 10):
        ids.check_id(f"id-{n}")
    assert len(ids._CHECKED) <= ids._CHECKED_MAX


def test_an_encoded_id_is_remembered_and_still_the_same_encoding() -> None:
    ids._ENCODED.clear()
    for value in ("user-w1", "Ünï/cödé", "a~b", "x" * 256):
        first = ids.encode_id(value)
        assert ids._ENCODED[value] == first
        assert ids.encode_id(value) == first and ids.decode_id(first) == value
    assert ids.encode_id("") == "~"
    for n in range(ids._CHECKED_MAX + 10):
        ids.encode_id(f"id-{n}")
    assert len(ids._ENCODED) <= ids._CHECKED_MAX


# ---- session 9: what a warm call still calls, and the shortcuts that keep plugins seen


async def test_a_warm_call_makes_at_most_170_calls_of_the_kernels_own() -> None:
    """cProfile's count of calls into hookagent's own modules during one warm call (261
    before session 9; anyio's and the builtins' calls are not counted here: their versions
    decide them)."""
    import cProfile
    import os
    import pstats

    import hookagent

    cfg = config()
    async with cfg.build() as agent:
        await agent.call("first", RuntimeContext(user_id=USER, session_id=SESSION))
    prof = cProfile.Profile()
    prof.enable()
    async with cfg.build() as agent:
        await agent.call("second", RuntimeContext(user_id=USER, session_id=SESSION))
    prof.disable()
    package = os.path.dirname(hookagent.__file__)
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    kernel_calls = sum(v[1] for (path, _, _), v in stats.items() if path.startswith(package))
    assert kernel_calls <= 170


async def test_done_is_awaited_without_a_coroutine_or_a_loop_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookagent._done import DONE

    counts = Counts(monkeypatch)
    for _ in range(3):
        await DONE  # answered at once, with None
    assert counts.rounds == 0 and counts.scopes == 0


async def test_quiet_events_and_idle_hooks_return_done_until_a_plugin_comes() -> None:
    """The per-call hooks nobody implements and the events nobody observes are not
    dispatched; a plugin registered after calls were made is called from the next call on
    (the skip is cached per plugin-manager generation, never for good)."""
    from hookagent import hookimpl
    from hookagent._done import DONE

    cfg = config()
    ctx = RuntimeContext(user_id=USER, session_id=SESSION)
    async with cfg.build() as agent:
        await agent.call("first", ctx)
    relay = cfg.kernel.relay
    state = AgentState(session_id=SESSION, user_id=USER)
    assert relay.state_loaded(state, ctx) is DONE
    assert relay.before_persist(state, ctx, "success") is DONE
    assert relay.after_persist(state, ctx, 1) is DONE
    seen: list[str] = []

    class Late:
        @hookimpl
        def hookagent_state_loaded(self, state: AgentState, ctx: RuntimeContext) -> None:
            seen.append("state_loaded")

        @hookimpl
        def hookagent_build_model_request(self, request: ModelRequest, ctx: RuntimeContext) -> None:
            seen.append("build_model_request")

        @hookimpl
        def hookagent_before_persist(
            self, state: AgentState, ctx: RuntimeContext, outcome: str
        ) -> None:
            seen.append("before_persist")

        @hookimpl
        def hookagent_after_persist(
            self, state: AgentState, ctx: RuntimeContext, version: int
        ) -> None:
            seen.append("after_persist")

        @hookimpl
        def hookagent_on_run_event(self, event: Any) -> None:
            seen.append(event.kind)

    cfg.kernel.pm.register(Late())
    pending = relay.state_loaded(state, ctx)
    assert pending is not DONE
    await pending
    seen.clear()
    async with cfg.build() as agent:
        await agent.call("second", RuntimeContext(user_id=USER, session_id=SESSION))
    assert seen == [
        "run_started",
        "state_loaded",
        "state_loaded",
        "build_model_request",
        "model_requested",
        "model_responded",
        "tool_called",
        "tool_returned",
        "build_model_request",
        "model_requested",
        "model_responded",
        "before_persist",
        "after_persist",
        "state_persisted",
        "run_finished",
    ]


async def test_a_finished_run_leaves_the_registry_empty() -> None:
    cfg = config()
    async with cfg.build() as agent:
        runs = [
            agent.prepare_call("hi", RuntimeContext(user_id=USER, session_id=f"s{i}")).start()
            for i in range(3)
        ]
        for run in runs:
            await run.result()
    registry = cfg.kernel.registry
    assert registry.list_all() == [] and registry._runs == {}
    assert all(run.registry_key is not None for run in runs)
