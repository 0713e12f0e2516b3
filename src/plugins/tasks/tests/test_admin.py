"""TaskAdmin: each trusted change persists at once, atomically, and a stale expected_revision
is a typed conflict, also when admin calls race (in one process, or through two store
handles on a shared server: the save's compare-and-set)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext, open_store
from hookagent.testing import ScriptedModel, tool_call
from hookagent_tasks import (
    SECTION,
    Decision,
    RequirementNotFound,
    TaskAdmin,
    TaskRevisionConflict,
    TaskScope,
    TasksError,
    TodoValidationError,
)

SCOPE = TaskScope("T-1", "ship the release", "ticket 9")


async def version(config: AgentConfig) -> int:
    store = await config.kernel.store()
    return (await store.get_versioned("ann", "s1")).version


async def admin_log(config: AgentConfig) -> list[str]:
    state = await config.build().get_agent_state("ann", "s1")
    return [e["reason"] for e in state.extensions.get("admin_log", [])]


@pytest.mark.anyio
async def test_each_change_persists_at_once_and_another_agent_sees_it(
    make_config: Callable[..., AgentConfig],
) -> None:
    store = InMemoryAgentStateStore()
    one, two = make_config(state_store=store), make_config(state_store=store)
    admin = TaskAdmin(one.build())
    tc = await admin.begin_task("ann", SCOPE, expected_revision=0, session_id="s1")
    assert tc.revision == 1 and (await TaskAdmin(two.build()).get("ann", session_id="s1")) == tc
    req = await admin.propose(
        "ann", "ACCEPTANCE_CRITERION", "tests pass", "chat", expected_revision=1, session_id="s1"
    )
    tc = await admin.decide(
        "ann", req.id, "CONFIRMED", Decision("USER", "chat"), expected_revision=2, session_id="s1"
    )
    tc = await admin.set_subject_version("ann", "abc", expected_revision=3, session_id="s1")
    tc = await admin.invalidate_subject("ann", expected_revision=4, session_id="s1")
    tc = await admin.write_todos(
        "ann", [{"content": "a", "status": "pending"}], expected_revision=5, session_id="s1"
    )
    seen = await TaskAdmin(two.build()).get("ann", session_id="s1")
    assert seen == tc and seen.revision == 6 and seen.requirements[0].status == "CONFIRMED"
    assert await admin_log(one) == [
        "tasks.begin_task",
        "tasks.propose",
        "tasks.decide",
        "tasks.set_subject_version",
        "tasks.invalidate_subject",
        "tasks.write_todos",
    ]


@pytest.mark.anyio
async def test_a_refusal_or_a_no_op_saves_nothing(make_config: Callable[..., AgentConfig]) -> None:
    config = make_config()
    admin = TaskAdmin(config.build())
    await admin.begin_task("ann", SCOPE, expected_revision=0, session_id="s1")
    saved = await version(config)
    assert (
        await admin.begin_task("ann", SCOPE, expected_revision=1, session_id="s1")
    ).revision == 1
    with pytest.raises(TaskRevisionConflict):
        await admin.begin_task("ann", TaskScope("T-2", "x"), expected_revision=0, session_id="s1")
    with pytest.raises(RequirementNotFound):
        await admin.decide(
            "ann", "R1", "CONFIRMED", Decision("USER", "x"), expected_revision=1, session_id="s1"
        )
    with pytest.raises(TodoValidationError):
        await admin.write_todos(
            "ann", [{"content": " ", "status": "pending"}], expected_revision=1, session_id="s1"
        )
    assert await version(config) == saved and await admin_log(config) == ["tasks.begin_task"]


@pytest.mark.anyio
async def test_concurrent_admin_calls_in_one_process_one_wins(
    make_config: Callable[..., AgentConfig],
) -> None:
    config = make_config()
    admin = TaskAdmin(config.build())
    await admin.begin_task("ann", SCOPE, expected_revision=0, session_id="s1")
    outcomes: list[Any] = []

    async def subject(v: str) -> None:
        try:
            outcomes.append(
                await admin.set_subject_version("ann", v, expected_revision=1, session_id="s1")
            )
        except TaskRevisionConflict as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(subject, f"v{i}")
    wins = [o for o in outcomes if not isinstance(o, Exception)]
    conflicts = [o for o in outcomes if isinstance(o, TaskRevisionConflict)]
    assert len(wins) == 1 and len(conflicts) == 5
    assert all((c.expected, c.actual) == (1, 2) for c in conflicts)
    final = await admin.get("ann", session_id="s1")
    assert final.revision == 2 and final.subject_version == wins[0].subject_version


class SlowReads:
    """A store handle that waits after each read, so two admins surely read the same version
    before either saves (the race that the compare-and-set must catch)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def get_versioned(self, *args: Any, **kwargs: Any) -> Any:
        got = await self._inner.get_versioned(*args, **kwargs)
        await anyio.sleep(0.2)
        return got


@pytest.mark.anyio
async def test_concurrent_admin_calls_through_two_handles_on_a_shared_store(store_url: str) -> None:
    """Two configurations (as two processes: their own store handle and session gate) decide
    at once with the same expected_revision: one wins, the other gets the typed conflict."""
    handles = [SlowReads(await open_store(store_url)), SlowReads(await open_store(store_url))]
    configs = [
        AgentConfig(model=ScriptedModel(), state_store=h, tool_groups=["tasks"]) for h in handles
    ]
    admins = [TaskAdmin(c.build()) for c in configs]
    try:
        await admins[0].begin_task("ann", SCOPE, expected_revision=0, session_id="s1")
        req = await admins[0].propose(
            "ann",
            "ACCEPTANCE_CRITERION",
            "tests pass",
            "chat",
            expected_revision=1,
            session_id="s1",
        )
        outcomes: dict[str, Any] = {}

        async def decide(i: int, status: str) -> None:
            try:
                outcomes[status] = await admins[i].decide(
                    "ann",
                    req.id,
                    status,
                    Decision("USER", f"admin {i}"),
                    expected_revision=2,
                    session_id="s1",
                )
            except TaskRevisionConflict as exc:
                outcomes[status] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(decide, 0, "CONFIRMED")
            tg.start_soon(decide, 1, "REJECTED")
        [won] = [s for s, o in outcomes.items() if not isinstance(o, Exception)]
        [lost] = [o for o in outcomes.values() if isinstance(o, TaskRevisionConflict)]
        assert (lost.expected, lost.actual) == (2, 3)
        final = await admins[1].get("ann", session_id="s1")
        assert final.revision == 3 and final.requirements[0].status == won
    finally:
        for config in configs:
            await config.aclose()
        for handle in handles:
            await handle.aclose()


def test_the_sync_twins(make_config: Callable[..., AgentConfig]) -> None:
    config = make_config()
    admin = TaskAdmin(config.build())
    tc = admin.begin_task_sync("ann", SCOPE, expected_revision=0, session_id="s1")
    req = admin.propose_sync(
        "ann", "ACCEPTANCE_CRITERION", "x", "s", expected_revision=1, session_id="s1"
    )
    admin.decide_sync(
        "ann", req.id, "CONFIRMED", Decision("CALLER", "ok"), expected_revision=2, session_id="s1"
    )
    admin.set_subject_version_sync("ann", "v1", expected_revision=3, session_id="s1")
    admin.invalidate_subject_sync("ann", expected_revision=4, session_id="s1")
    admin.write_todos_sync(
        "ann", [{"content": "a", "status": "pending"}], expected_revision=5, session_id="s1"
    )
    with pytest.raises(TaskRevisionConflict):
        admin.set_subject_version_sync("ann", "v2", expected_revision=5, session_id="s1")
    tc = admin.get_sync("ann", session_id="s1")
    assert tc.revision == 6 and tc.tasks[0].subject == "a" and tc.subject_version is None
    config.close()


@pytest.mark.anyio
async def test_a_context_names_the_slot(make_config: Callable[..., AgentConfig]) -> None:
    admin = TaskAdmin(make_config().build())
    tc = await admin.begin_task(
        RuntimeContext(user_id="ann", session_id="s1"), SCOPE, expected_revision=0
    )
    assert (await admin.get("ann", session_id="s1")) == tc
    assert (await admin.get("ann", session_id="other")).revision == 0  # slots are separate
    with pytest.raises(TasksError, match="user_id or a RuntimeContext"):
        await admin.get(3)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_called_from_inside_the_running_call_it_refuses_instead_of_waiting_forever(
    make_config: Callable[..., AgentConfig],
) -> None:
    found: list[str] = []
    holder: list[TaskAdmin] = []

    async def begin_here(ctx: RuntimeContext) -> str:
        """Begin a task from inside the call (wrong: the call holds the session)."""
        try:
            await holder[0].begin_task(ctx, SCOPE, expected_revision=0)
        except TasksError as exc:
            found.append(str(exc))
        return "tried"

    model = ScriptedModel([tool_call("begin_here"), "done"])
    agent = make_config(model, tools=[begin_here]).build()
    holder.append(TaskAdmin(agent))
    with anyio.fail_after(10):
        await agent.call("go", RuntimeContext(user_id="ann", session_id="s1"))
    assert found and "would wait for itself" in found[0]
    state = await agent.get_agent_state("ann", "s1")
    assert SECTION not in state.extensions


@pytest.mark.anyio
async def test_a_change_made_from_a_running_call_on_another_session_is_a_run_event(
    make_config: Callable[..., AgentConfig], events: Any
) -> None:
    holder: list[TaskAdmin] = []

    async def open_ticket(title: str, ctx: RuntimeContext) -> str:
        """Open a task in the ticket's own session."""
        other = ctx.derive(session_id="ticket-1")
        tc = await holder[0].begin_task(other, TaskScope("TK-1", title), expected_revision=0)
        return f"opened at revision {tc.revision}"

    model = ScriptedModel([tool_call("open_ticket", title="fix login"), "done"])
    agent = make_config(model, tools=[open_ticket]).build()
    holder.append(TaskAdmin(agent))
    await agent.call("go", RuntimeContext(user_id="ann", session_id="s1"))
    assert events.of("task_changed") == [
        {
            "section": "tasks_context",
            "revision": 1,
            "change": "begin_task",
            "session_id": "ticket-1",
        }
    ]
    assert (await holder[0].get("ann", session_id="ticket-1")).scope == TaskScope(
        "TK-1", "fix login"
    )
