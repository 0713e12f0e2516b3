"""AgentSession's commands in one process (memory:// logs): idempotency, order, statuses,
interrupt, steer, respond, resume."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hookagent import AgentConfig, Approve, ConfigurationError, Msg
from hookagent.errors import InvalidIdentifier
from hookagent.messages import new_id
from hookagent.sessionlog import SessionLog, open_session_log
from hookagent_session import (
    AgentSession,
    HostNotRunning,
    IdempotencyConflict,
    InboxBusy,
    InvalidCommand,
    NotRunning,
    SessionHost,
    StaleRun,
    command_id_for,
)
from session_support import AskBeforeDeploy, GatedModel, deploy, eventually, statuses

pytestmark = pytest.mark.anyio


@pytest.fixture
async def env() -> AsyncIterator[dict[str, Any]]:
    name = new_id()
    model = GatedModel()
    config = AgentConfig(
        model=model,
        tools=[deploy],
        plugins=[AskBeforeDeploy()],
        session_log=f"memory://log-{name}",
    )
    inbox_url = f"memory://inbox-{name}"
    host = SessionHost(config, inbox=inbox_url, poll_interval=0.05, replica_id="r1")
    async with host:
        inbox: SessionLog = await open_session_log(inbox_url)
        yield {"host": host, "model": model, "session": host.session("u", "s"), "inbox": inbox}


async def test_the_same_key_is_accepted_once_and_other_content_is_refused(
    env: dict[str, Any],
) -> None:
    session: AgentSession = env["session"]
    first = await session.submit("hello", idempotency_key="k1")
    assert first.command_id == command_id_for("u", "s", "k1")
    assert first.status == "queued" and first.kind == "submit" and first.idempotency_key == "k1"
    again = await session.submit(Msg.user("hello"), idempotency_key="k1")  # another Msg id
    assert again.command_id == first.command_id and again.seq == first.seq
    with pytest.raises(IdempotencyConflict) as err:
        await session.submit("something else", idempotency_key="k1")
    assert err.value.command_id == first.command_id
    with pytest.raises(IdempotencyConflict):
        await session.resume("turn-x", idempotency_key="k1")  # another kind
    done = await session.wait(first.command_id, timeout=10)
    assert done.status == "completed" and done.reply_text == "ok"
    resent = await session.submit("hello", idempotency_key="k1")  # after it ran: its view
    assert resent.status == "completed" and resent.run_id == done.run_id
    assert len(await session.tasks()) == 1
    assert env["model"].calls == 1  # ran once
    # another session's same key is another command
    other = await env["host"].session("u", "s2").submit("hello", idempotency_key="k1")
    assert other.command_id != first.command_id


async def test_bad_commands_are_refused_and_nothing_is_recorded(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    for bad in ("", [], [42], b"bytes"):
        with pytest.raises(InvalidCommand):
            await session.submit(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidCommand):
        await session.submit("x", idempotency_key="")
    with pytest.raises(InvalidCommand):
        await session.respond("req-1", {"kind": "maybe"})
    with pytest.raises(InvalidCommand):
        await session.respond("req-1", Approve("another-id"))
    assert await session.tasks() == []


async def test_commands_queue_behind_an_unfinished_turn_and_run_in_order(
    env: dict[str, Any],
) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    model.block()
    a = await session.submit("first", idempotency_key="a")
    b = await session.submit("second", idempotency_key="b")
    c = await session.submit("third", idempotency_key="c")
    running = await eventually(lambda: _status(session, a.command_id, "running"))
    assert running.run_id == f"{a.command_id}.1" and running.turn_id
    assert (await session.task(b.command_id)).status == "queued"
    assert (await session.current()) == running
    model.release()
    done = [await session.wait(x.command_id, timeout=10) for x in (a, b, c)]
    assert [d.status for d in done] == ["completed"] * 3
    assert model.seen == ["first", "second", "third"]
    assert done[0].finished_at <= done[1].started_at  # type: ignore[operator]
    assert len({d.turn_id for d in done}) == 3
    started = [e async for e in session.events(follow=False) if e.type == "run/started"]
    assert [(e.run_id, e.turn_id) for e in started] == [(d.run_id, d.turn_id) for d in done]


async def test_every_status_transition_is_recorded(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    view = await session.submit("hi", idempotency_key="t")
    done = await session.wait(view.command_id, timeout=10)
    assert done.status == "completed" and done.generate_reason == "COMPLETED"
    assert done.replica_id == "r1" and done.submitted_at <= done.started_at <= done.finished_at  # type: ignore[operator]
    assert await statuses(env["inbox"], "u", "s", view.command_id) == [
        "starting",
        "running",
        "completed",
    ]


async def _status(session: AgentSession, command_id: str, status: str) -> Any:
    view = await session.task(command_id)
    return view if view.status == status else None


async def test_interrupt_refuses_a_stale_run_id_and_stops_the_one_seen(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    with pytest.raises(NotRunning):
        await session.interrupt()
    model.block()
    view = await session.submit("long job", idempotency_key="j")
    running = await eventually(lambda: _status(session, view.command_id, "running"))
    with pytest.raises(StaleRun) as err:
        await session.interrupt("an-older-run")
    assert err.value.running_run_id == running.run_id
    assert (await session.task(view.command_id)).status == "running"  # untouched
    stop = await session.interrupt(running.run_id, idempotency_key="stop")
    assert stop.kind == "interrupt"
    stopped = await session.wait(view.command_id, timeout=10)
    assert stopped.status == "interrupted" and stopped.generate_reason == "INTERRUPTED"
    control = await session.wait(stop.command_id, timeout=10)
    assert control.status == "completed" and control.target_run_id == running.run_id
    model.release()
    later = await session.submit("next", idempotency_key="n")
    assert (await session.wait(later.command_id, timeout=10)).status == "completed"


async def test_steer_only_while_running_and_it_continues_the_turn(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    with pytest.raises(NotRunning):
        await session.steer("go left")
    assert await session.tasks() == []  # nothing recorded
    model.block()
    view = await session.submit("go right", idempotency_key="r")
    queued = await session.submit("afterwards", idempotency_key="q")
    running = await eventually(lambda: _status(session, view.command_id, "running"))
    steer = await session.steer("no, go left", idempotency_key="s")
    stopped = await session.wait(view.command_id, timeout=10)
    assert stopped.status == "interrupted"
    model.release()
    steered = await session.wait(steer.command_id, timeout=10)
    assert steered.status == "completed" and steered.target_run_id == running.run_id
    assert steered.turn_id == running.turn_id  # the same turn goes on
    after = await session.wait(queued.command_id, timeout=10)
    assert after.status == "completed" and after.started_at >= steered.finished_at  # type: ignore[operator]
    assert model.seen[-2:] == ["no, go left", "afterwards"]


async def test_respond_answers_an_ask_and_is_not_replayed_as_chat(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    model.replies = [("tool", "deploy", {"env": "prod"}), "Done: prod is live."]
    view = await session.submit("ship it", idempotency_key="ship")
    suspended = await session.wait(view.command_id, timeout=10)
    assert suspended.status == "suspended" and suspended.generate_reason == "SUSPENDED"
    [pending] = await session.pending_interactions()
    unknown = await session.respond("not-a-request", Approve("not-a-request"))
    refused = await session.wait(unknown.command_id, timeout=10)
    assert refused.status == "rejected" and "not pending" in (refused.error or "")
    answer = await session.respond(pending.tool_use_id, {"kind": "approve"}, idempotency_key="yes")
    done = await session.wait(answer.command_id, timeout=10)
    assert done.status == "completed" and done.reply_text == "Done: prod is live."
    assert done.turn_id == suspended.turn_id
    state = await env["host"].agent.get_agent_state("u", "s")
    assert [m.text for m in state.context if m.role == "user"] == ["ship it"]
    assert await session.pending_interactions() == []


async def test_resume_continues_only_the_latest_unfinished_turn(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    first = await session.wait(
        (await session.submit("one", idempotency_key="1")).command_id, timeout=10
    )
    model.block()
    second = await session.submit("two", idempotency_key="2")
    running = await eventually(lambda: _status(session, second.command_id, "running"))
    await session.interrupt(running.run_id)
    assert (await session.wait(second.command_id, timeout=10)).status == "interrupted"
    model.release()
    old = await session.wait((await session.resume(str(first.turn_id))).command_id, timeout=10)
    assert old.status == "rejected" and "latest" in (old.error or "")
    resumed = await session.wait(
        (await session.resume(str(running.turn_id), idempotency_key="res")).command_id, timeout=10
    )
    assert resumed.status == "completed" and resumed.turn_id == running.turn_id
    assert resumed.run_id != running.run_id
    again = await session.wait((await session.resume(str(running.turn_id))).command_id, timeout=10)
    assert again.status == "rejected"  # that turn is completed now


async def test_a_failing_run_fails_its_command_and_later_ones_go_on(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    env["model"].replies = [RuntimeError("provider down")]
    bad = await session.submit("x", idempotency_key="x")
    good = await session.submit("y", idempotency_key="y")
    failed = await session.wait(bad.command_id, timeout=10)
    assert failed.status == "failed" and failed.error_type == "ModelError"
    assert "provider down" in (failed.error or "")
    assert (await session.wait(good.command_id, timeout=10)).status == "completed"


async def test_live_events_and_resumable_log_events(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    model.block()
    view = await session.submit("watch me", idempotency_key="w")
    running = await eventually(lambda: _status(session, view.command_id, "running"))
    kinds: list[str] = []

    async def follow() -> None:
        async for e in session.live_events(str(running.run_id)):
            kinds.append(e.kind)

    import anyio

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow)
        model.release()
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    events = [e async for e in session.events(follow=False)]
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    tail = [e async for e in session.events(seqs[2], follow=False)]
    assert [e.seq for e in tail] == seqs[3:]


def test_sync_twins(tmp_path: Any) -> None:
    name = new_id()
    config = AgentConfig(model=GatedModel(default="sync ok"), session_log=f"memory://log-{name}")
    with SessionHost(config, inbox=f"memory://inbox-{name}", poll_interval=0.05) as host:
        session = host.session("u", "s")
        view = session.submit_sync("hi", idempotency_key="k")
        done = session.wait_sync(view.command_id, timeout=10)
        assert done.status == "completed" and done.reply_text == "sync ok"
        assert session.tasks_sync(status="completed") == [done]


async def test_the_status_sequence_of_every_kind(env: dict[str, Any]) -> None:
    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    inbox: SessionLog = env["inbox"]
    model.replies = [("tool", "deploy", {"env": "prod"}), "deployed"]
    ask = await session.submit("ship it", idempotency_key="ask")
    await session.wait(ask.command_id, timeout=10)
    [pending] = await session.pending_interactions()
    answer = await session.respond(pending.tool_use_id, Approve(pending.tool_use_id))
    await session.wait(answer.command_id, timeout=10)
    model.block()
    long = await session.submit("long", idempotency_key="long")
    running = await eventually(lambda: _status(session, long.command_id, "running"))
    steer = await session.steer("shorter")
    await eventually(lambda: _status(session, steer.command_id, "running"))
    stop = await session.interrupt()
    await session.wait(stop.command_id, timeout=10)  # applied: the steer's run is told to stop
    model.release()
    stale = await session.resume("not-a-turn")
    await session.wait(stale.command_id, timeout=10)
    resumed = await session.resume(str(running.turn_id))
    await session.wait(resumed.command_id, timeout=10)
    expected = {
        ask.command_id: ["starting", "running", "suspended"],
        answer.command_id: ["starting", "running", "completed"],
        long.command_id: ["starting", "running", "interrupted"],
        steer.command_id: ["starting", "running", "interrupted"],
        stop.command_id: ["completed"],
        stale.command_id: ["starting", "rejected"],
        resumed.command_id: ["starting", "running", "completed"],
    }
    for cid, seq in expected.items():
        assert await statuses(inbox, "u", "s", cid) == seq, (await session.task(cid)).kind
    views = {v.command_id: v for v in await session.tasks()}
    assert views[stop.command_id].target_run_id == views[steer.command_id].run_id
    assert views[resumed.command_id].turn_id == running.turn_id == views[steer.command_id].turn_id


async def test_events_follow_the_log_as_runs_write_it(env: dict[str, Any]) -> None:
    import anyio

    session: AgentSession = env["session"]
    seen: list[tuple[int, str]] = []

    async def follow() -> None:
        async for e in session.events():
            seen.append((e.seq, e.type))
            if e.type == "run/finished":
                return

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await anyio.sleep(0.05)  # the follower waits on an empty log first
            await session.submit("hi")
    assert seen[0] == (1, "run/started") and seen[-1][1] == "run/finished"
    assert [s for s, _ in seen] == list(range(1, len(seen) + 1))


async def test_a_busy_inbox_and_a_host_not_running_are_typed_errors() -> None:
    name = new_id()
    config = AgentConfig(model=GatedModel(), session_log=f"memory://log-{name}")
    host = SessionHost(config, inbox=f"memory://inbox-{name}", append_timeout=0.3)
    with pytest.raises(HostNotRunning):
        await host.session("u", "s").submit("hi")
    inbox = await open_session_log(f"memory://inbox-{name}")
    held = await inbox.acquire("u", "c/s", "someone-else", 60)
    async with host:
        with pytest.raises(InboxBusy):
            await host.session("u", "s").submit("hi")
        await inbox.release(held)
        assert (await host.session("u", "s").submit("hi")).status == "queued"
    with pytest.raises(ConfigurationError):
        SessionHost(AgentConfig(model=GatedModel()), inbox="memory://x")
    with pytest.raises(ConfigurationError):
        SessionHost(config, inbox="memory://x", poll_interval=0)
    with pytest.raises(InvalidIdentifier):
        host.session("u", "")


async def test_resume_refuses_a_turn_a_direct_call_came_after(env: dict[str, Any]) -> None:
    from hookagent import RuntimeContext

    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    model.block()
    view = await session.submit("one", idempotency_key="1")
    running = await eventually(lambda: _status(session, view.command_id, "running"))
    await session.interrupt(running.run_id)
    await session.wait(view.command_id, timeout=10)
    model.release()
    await env["host"].agent.call("outside the inbox", RuntimeContext("u", "s"))
    refused = await session.wait(
        (await session.resume(str(running.turn_id))).command_id, timeout=10
    )
    assert refused.status == "rejected" and "latest" in (refused.error or "")


async def test_a_busy_session_log_delays_the_run_without_losing_or_repeating_it(
    env: dict[str, Any],
) -> None:
    import anyio

    session: AgentSession = env["session"]
    log = await open_session_log(env["host"].config.session_log)
    held = await log.acquire("u", "s", "an-operator", 60)  # an admin change in progress
    view = await session.submit("wait for it", idempotency_key="w")
    await eventually(lambda: _status(session, view.command_id, "starting"))
    await anyio.sleep(0.3)
    assert (await session.task(view.command_id)).status == "starting"  # retrying, nothing ran
    assert env["model"].calls == 0
    await log.release(held)
    done = await session.wait(view.command_id, timeout=10)
    assert done.status == "completed" and env["model"].calls == 1
    held = await log.acquire("u", "s", "an-operator", 60)
    stuck = await session.submit("never mind", idempotency_key="n")
    await eventually(lambda: _status(session, stuck.command_id, "starting"))
    await session.interrupt()
    stopped = await session.wait(stuck.command_id, timeout=10)
    assert stopped.status == "interrupted" and env["model"].calls == 1
    await log.release(held)


async def test_a_queued_command_is_cancelled_and_never_runs(env: dict[str, Any]) -> None:
    from hookagent_session import CommandRejected, UnknownCommand

    session: AgentSession = env["session"]
    model: GatedModel = env["model"]
    model.block()
    running = await session.submit("first", idempotency_key="c1")
    queued = await session.submit("second", idempotency_key="c2")
    await eventually(lambda: model.calls == 1)
    cancelled = await session.cancel(queued.command_id)
    assert cancelled.status == "rejected" and cancelled.error_type == "Cancelled"
    assert (await session.cancel(queued.command_id)).seq == cancelled.seq  # the same answer
    with pytest.raises(CommandRejected, match="running"):
        await session.cancel(running.command_id)
    with pytest.raises(UnknownCommand):
        await session.cancel("cmd-nope")
    model.release()
    done = await session.wait(running.command_id, timeout=10)
    assert done.status == "completed"
    third = await session.submit("third", idempotency_key="c3")
    assert (await session.wait(third.command_id, timeout=10)).status == "completed"
    assert "second" not in model.seen  # the cancelled input never reached the model
    assert (await session.task(queued.command_id)).status == "rejected"
