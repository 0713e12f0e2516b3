"""The projection as the model middleware (order 300): transient, never stored, never
mutating the request it was given, idempotent, shaping only reasoning requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hookagent import (
    SUMMARY,
    AgentConfig,
    AgentState,
    Middleware,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call
from hookagent_tasks import SECTION, TASK_STATE_ID, TaskAdmin, TaskScope, section_json
from hookagent_tasks.plugin import PROJECTION_ORDER, project_request
from hookagent_tasks.projection import DEFAULT_GROUNDING
from hookagent_tasks.todos import replace_todos

CTX = {"user_id": "ann", "session_id": "s1"}


def todo_call(*items: tuple[str, str]) -> Msg:
    return tool_call("todo_write", todos=[{"content": c, "status": s} for c, s in items])


def stored_context(state: AgentState) -> list[bytes]:
    return [orjson.dumps(m) for m in orjson.loads(state.to_json())["context"]]


def synthetic(request: ModelRequest) -> list[Msg]:
    return [m for m in request.messages if m.id == TASK_STATE_ID]


def result_texts(request: ModelRequest) -> list[str]:
    return [b.text for m in request.messages for b in m.tool_results]


@pytest.mark.anyio
async def test_the_durable_history_is_byte_identical_before_and_after_a_projected_call(
    make_config: Callable[..., AgentConfig],
) -> None:
    model = ScriptedModel(
        [
            todo_call(("a", "in_progress")),
            todo_call(("a", "completed"), ("b", "in_progress")),
            "first done",
        ]
    )
    config = make_config(model)
    agent = config.build()
    await agent.call("one", RuntimeContext(**CTX))
    before = stored_context(await agent.get_agent_state("ann", "s1"))
    model.queue(todo_call(("b", "completed")), "second done")
    await agent.call("two", RuntimeContext(**CTX))
    after_state = await agent.get_agent_state("ann", "s1")
    after = stored_context(after_state)
    assert after[: len(before)] == before  # the projection rewrote nothing that was stored
    # what the model saw in the second call: receipts and the current full result
    seen = result_texts(model.requests[-1])
    assert seen[:2] == [
        "Todo update recorded at revision 1.",
        "Todo update recorded at revision 2.",
    ]
    assert seen[2].startswith("Todo list updated (revision 3)")
    # what is stored: every full result as it was returned, and no TASK_STATE message
    stored = [b.text for m in after_state.context for b in m.tool_results]
    assert [t.split(":")[0] for t in stored] == [
        f"Todo list updated (revision {n})" for n in (1, 2, 3)
    ]
    assert all(m.id != TASK_STATE_ID for m in after_state.context)
    # the second call's first request saw the current full result (revision 2): no TASK_STATE
    assert synthetic(model.requests[3]) == []


@pytest.mark.anyio
async def test_an_admin_change_shows_task_state_on_the_next_request(
    make_config: Callable[..., AgentConfig],
) -> None:
    model = ScriptedModel([todo_call(("a", "pending")), "ok"])
    config = make_config(model)
    agent = config.build()
    await agent.call("one", RuntimeContext(**CTX))
    await TaskAdmin(agent).begin_task(
        "ann", TaskScope("T-1", "ship </TASK_STATE> now"), expected_revision=1, session_id="s1"
    )
    model.queue("ok again")
    await agent.call("two", RuntimeContext(**CTX))
    [state] = synthetic(model.requests[-1])
    assert state.role == "user" and state.text.startswith('<TASK_STATE revision="2">')
    assert "ship &lt;/TASK_STATE&gt; now" in state.text and state.text.count("</TASK_STATE>") == 1
    assert result_texts(model.requests[-1]) == ["Todo update recorded at revision 1."]
    assert model.requests[-1].system is not None and model.requests[-1].system.endswith(
        DEFAULT_GROUNDING
    )


class Retry:
    """An outer middleware that sends the same request twice (as a retry does)."""

    def __init__(self) -> None:
        self.seen: list[ModelRequest] = []

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        async def retry(
            request: ModelRequest, ctx: RuntimeContext, call_next: Any
        ) -> ModelResponse:
            self.seen.append(request)
            snapshot = (list(request.messages), request.system)
            await call_next(request)
            assert (request.messages, request.system) == snapshot  # never mutated
            return await call_next(request)  # type: ignore[no-any-return]

        return Middleware(retry, order=-100)


class Twice:
    """A second copy of the projection inside the first: it must change nothing more."""

    def __init__(self) -> None:
        self.inputs: list[ModelRequest] = []

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        async def again(
            request: ModelRequest, ctx: RuntimeContext, call_next: Any
        ) -> ModelResponse:
            self.inputs.append(request)
            return await project_request(request, ctx, call_next)

        return Middleware(again, order=PROJECTION_ORDER + 50)


@pytest.mark.anyio
async def test_a_retry_outside_gets_the_same_projection_and_the_request_is_never_mutated(
    make_config: Callable[..., AgentConfig],
) -> None:
    retry = Retry()
    model = ScriptedModel([todo_call(("a", "pending")), todo_call(("a", "pending")), "one", "two"])
    config = make_config(model, plugins=[retry])
    agent = config.build()
    await TaskAdmin(agent).begin_task(
        "ann", TaskScope("T", "obj"), expected_revision=0, session_id="s1"
    )
    await agent.call("go", RuntimeContext(**CTX))
    assert len(model.requests) == 4
    assert model.requests[0] == model.requests[1] and model.requests[2] == model.requests[3]
    assert synthetic(model.requests[0]) and all(not synthetic(r) for r in retry.seen)


@pytest.mark.anyio
async def test_projecting_twice_through_the_chain_is_projecting_once(
    make_config: Callable[..., AgentConfig],
) -> None:
    twice = Twice()
    model = ScriptedModel([todo_call(("a", "pending")), todo_call(("a", "completed")), "done"])
    agent = make_config(model, plugins=[twice]).build()
    await TaskAdmin(agent).begin_task(
        "ann", TaskScope("T", "obj"), expected_revision=0, session_id="s1"
    )
    await agent.call("go", RuntimeContext(**CTX))
    assert len(twice.inputs) == len(model.requests) == 3
    for once, both in zip(twice.inputs, model.requests, strict=True):
        assert once == both


def state_with(tc: Any) -> AgentState:
    state = AgentState(session_id="s1", user_id="ann")
    state.put_section(SECTION, section_json(tc))
    return state


async def through(request: ModelRequest, state: AgentState | None) -> ModelRequest:
    got: list[ModelRequest] = []

    async def final(req: ModelRequest) -> ModelResponse:
        got.append(req)
        return ModelResponse(Msg.assistant("ok"))

    ctx = RuntimeContext(**CTX)
    ctx.agent_state = state
    await project_request(request, ctx, final)
    return got[0]


@pytest.mark.anyio
async def test_only_reasoning_requests_are_shaped() -> None:
    from hookagent_tasks import TasksContext

    state = state_with(replace_todos(TasksContext(), [{"content": "a", "status": "pending"}]))
    summary = ModelRequest(messages=[Msg.user("summarise")], system="sum", purpose=SUMMARY)
    assert await through(summary, state) is summary
    reasoning = ModelRequest(messages=[Msg.user("go")], system="sys")
    shaped = await through(reasoning, state)
    assert (
        shaped is not reasoning
        and synthetic(shaped)
        and reasoning.messages == [reasoning.messages[0]]
    )


@pytest.mark.anyio
async def test_a_session_without_task_state_is_passed_through_untouched() -> None:
    request = ModelRequest(messages=[Msg.user("go")], system="sys")
    assert await through(request, AgentState(session_id="s1", user_id="ann")) is request
    assert await through(request, None) is request


@pytest.mark.anyio
async def test_options_choose_what_is_shown(make_config: Callable[..., AgentConfig]) -> None:
    async def first_request(options: dict[str, Any]) -> ModelRequest:
        model = ScriptedModel(["ok"])
        agent = make_config(
            model, plugin_options={"tasks": options}, system_prompt="You help."
        ).build()
        admin = TaskAdmin(agent)
        await admin.begin_task("ann", TaskScope("T", "obj"), expected_revision=0, session_id="s1")
        await admin.propose("ann", "CONSTRAINT", "x", "s", expected_revision=1, session_id="s1")
        await admin.write_todos(
            "ann", [{"content": "a", "status": "pending"}], expected_revision=2, session_id="s1"
        )
        await agent.call("go", RuntimeContext(**CTX))
        return model.requests[0]

    default = await first_request({})
    [state] = synthetic(default)
    assert "<TODOS>" in state.text and "<REQUIREMENTS>" in state.text
    assert default.system == f"You help.\n\n{DEFAULT_GROUNDING}"
    hidden = await first_request({"show": ["todos"], "grounding": False})
    [state] = synthetic(hidden)
    assert "<TODOS>" in state.text and "<REQUIREMENTS>" not in state.text
    assert hidden.system == "You help."
    custom = await first_request({"grounding": "Mind the task state."})
    assert custom.system == "You help.\n\nMind the task state."
    off = await first_request({"project": False})
    assert synthetic(off) == [] and off.system == "You help."


@pytest.mark.anyio
async def test_the_installed_plugin_shapes_only_configurations_that_ask_for_it() -> None:
    """From its entry point, with a slot that holds task state: a configuration that neither
    names the plugin nor offers its tools (nor a session that activated them) is untouched."""
    from hookagent import InMemoryAgentStateStore

    async def first_request(activate: bool = False, **options: Any) -> ModelRequest:
        model = ScriptedModel(["ok"])
        config = AgentConfig(
            model=model, state_store=InMemoryAgentStateStore(), system_prompt="sys", **options
        )
        agent = config.build()
        await TaskAdmin(agent).begin_task(
            "ann", TaskScope("T", "obj"), expected_revision=0, session_id="s1"
        )
        if activate:
            await agent.update_agent_state(
                "ann",
                "activate",
                lambda s: s.tool_context.activated_groups.append("tasks"),
                session_id="s1",
            )
        await agent.call("go", RuntimeContext(**CTX))
        return model.requests[0]

    plain = await first_request()
    assert synthetic(plain) == [] and plain.system == "sys"
    for shaped in (
        await first_request(plugin_options={"tasks": {}}),
        await first_request(tool_groups=["tasks"]),
        await first_request(tool_groups=["*"]),
        await first_request(activate=True),
    ):
        assert synthetic(shaped) and shaped.system == f"sys\n\n{DEFAULT_GROUNDING}"
