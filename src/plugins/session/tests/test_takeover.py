"""Claims left by a lost replica (forged in the inbox here), and two hosts in one process."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest
from hookagent import AgentConfig, RuntimeContext
from hookagent.messages import new_id
from hookagent.sessionlog import LogEvent, open_session_log
from hookagent_session import SessionHost, run_id_for
from hookagent_session.driver import status_event
from hookagent_session.inbox import Inbox
from session_support import GatedModel, eventually

pytestmark = pytest.mark.anyio


def urls() -> tuple[str, str]:
    name = new_id()
    return f"memory://log-{name}", f"memory://inbox-{name}"


async def forge_claim(inbox_url: str, command_id: str, attempt: int = 1) -> None:
    """What a replica that died right after claiming leaves in the inbox."""
    inbox = Inbox(await open_session_log(inbox_url))
    fields = {"attempt": attempt, "run_id": run_id_for(command_id, attempt), "replica": "ghost"}
    await inbox.append("u", "s", lambda _s: [status_event(command_id, "starting", **fields)])


async def submitted(log_url: str, inbox_url: str, text: str) -> str:
    config = AgentConfig(model=GatedModel(), session_log=log_url)
    async with SessionHost(config, inbox=inbox_url, dispatch=False) as client:
        return (await client.session("u", "s").submit(text, idempotency_key=text)).command_id


def dispatcher(log_url: str, inbox_url: str, model: GatedModel, replica: str = "r1") -> SessionHost:
    config = AgentConfig(model=model, session_log=log_url)
    return SessionHost(config, inbox=inbox_url, users=["u"], poll_interval=0.05, replica_id=replica)


async def test_a_claim_that_never_started_is_run_again_under_a_new_attempt() -> None:
    log_url, inbox_url = urls()
    cid = await submitted(log_url, inbox_url, "hello")
    await forge_claim(inbox_url, cid)
    model = GatedModel()
    async with dispatcher(log_url, inbox_url, model) as host:  # it discovers the session
        done = await host.session("u", "s").wait(cid, timeout=10)
        assert done.status == "completed" and done.run_id == run_id_for(cid, 2)
        log = await open_session_log(log_url)
        assert await log.is_sealed("u", "s", run_id_for(cid, 1))  # the ghost can never start it
    assert model.calls == 1


async def test_a_claim_whose_run_finished_gets_the_outcome_the_log_recorded() -> None:
    log_url, inbox_url = urls()
    cid = await submitted(log_url, inbox_url, "hello")
    await forge_claim(inbox_url, cid)
    ghost_model = GatedModel(default="the ghost's reply")
    ghost = AgentConfig(model=ghost_model, session_log=log_url).build()
    await ghost.call("hello", RuntimeContext("u", "s", run_id_for(cid, 1)))  # then it died
    model = GatedModel()
    async with dispatcher(log_url, inbox_url, model) as host:
        done = await host.session("u", "s").wait(cid, timeout=10)
        assert done.status == "completed" and done.run_id == run_id_for(cid, 1)
    assert model.calls == 0 and ghost_model.calls == 1  # never run twice


async def test_a_claim_whose_run_holds_the_log_is_left_alone_until_its_lease_ends() -> None:
    log_url, inbox_url = urls()
    cid = await submitted(log_url, inbox_url, "hello")
    await forge_claim(inbox_url, cid)
    log = await open_session_log(log_url)
    writer = await log.acquire("u", "s", run_id_for(cid, 1), 60)  # alive on another replica
    model = GatedModel()
    async with dispatcher(log_url, inbox_url, model) as host:
        session = host.session("u", "s")
        await anyio.sleep(0.5)
        assert (await session.task(cid)).status == "starting" and model.calls == 0
        await log.release(writer)  # it ended without recording anything
        done = await session.wait(cid, timeout=10)
        assert done.status == "completed" and done.run_id == run_id_for(cid, 2)


async def test_a_claim_whose_run_took_its_input_is_interrupted_not_resent() -> None:
    log_url, inbox_url = urls()
    cid = await submitted(log_url, inbox_url, "hello")
    later = await submitted(log_url, inbox_url, "later")
    await forge_claim(inbox_url, cid)
    log = await open_session_log(log_url)  # what a replica killed mid-run leaves behind
    writer = await log.acquire("u", "s", run_id_for(cid, 1), 60)
    started = LogEvent("run/started", {}, False, run_id_for(cid, 1), "turn-1", occurred_at=1.0)
    await log.commit(writer, "b1", 0, [started])
    await log.release(writer)  # (its lease expired)
    model = GatedModel()
    async with dispatcher(log_url, inbox_url, model) as host:
        session = host.session("u", "s")
        lost = await session.wait(cid, timeout=10)
        assert lost.status == "interrupted" and lost.error_type == "ReplicaLost"
        assert (await session.wait(later, timeout=10)).status == "completed"
    assert model.seen == ["later"]  # "hello" was not sent again


async def test_two_hosts_in_one_process_run_each_command_once_in_order() -> None:
    log_url, inbox_url = urls()
    journal: list[str] = []
    model_a, model_b = GatedModel(journal=journal), GatedModel(journal=journal)
    async with (
        dispatcher(log_url, inbox_url, model_a, "ra") as a,
        dispatcher(log_url, inbox_url, model_b, "rb") as b,
    ):
        sent: dict[str, list[Any]] = {}
        for i in range(8):
            for j, s in enumerate(("s0", "s1", "s2", "s3")):
                host = (a, b)[(i + j) % 2]
                view = await host.session("u", s).submit(f"{s} {i}", idempotency_key=f"{s}-{i}")
                sent.setdefault(s, []).append(view.command_id)
        for s, cids in sent.items():
            views = [await a.session("u", s).wait(c, timeout=20) for c in cids]
            assert [v.status for v in views] == ["completed"] * 8
            assert [v.reply_text for v in views] == ["ok"] * 8
            ends = [v.finished_at for v in views]
            assert ends == sorted(ends)  # type: ignore[type-var]
        await eventually(lambda: not a.owned_sessions() and not b.owned_sessions())
        assert await b.sessions("u") == ["s0", "s1", "s2", "s3"]
    seen = model_a.seen + model_b.seen
    assert Counter(seen) == Counter(f"{s} {i}" for s in sent for i in range(8))
    for s in sent:  # each session's order, whichever host ran each command
        order = [t for t in journal if t.startswith(s + " ")]
        assert order == [f"{s} {i}" for i in range(8)]
