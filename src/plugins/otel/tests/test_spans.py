"""The span tree of scripted runs, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import anyio
import pytest
from hookagent import (
    AgentConfig,
    Approve,
    InMemoryAgentStateStore,
    Middleware,
    ModelResponse,
    ModelUnavailable,
    Msg,
    RuntimeContext,
    ToolUseBlock,
    ask,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call
from hookagent.tools import error_result
from opentelemetry.trace import StatusCode

from .conftest import Otel

SECRET = "my card number is 4111-1111"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def two_calls() -> Msg:
    return Msg.assistant(
        [ToolUseBlock("c1", "add", {"a": 1, "b": 2}), ToolUseBlock("c2", "lookup", {"key": "k"})]
    )


def config(otel_plugin: object, model: ScriptedModel, **kw: object) -> AgentConfig:
    kw.setdefault("tools", [add, lookup])
    return AgentConfig(
        model=model,
        plugins=[otel_plugin],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
        **kw,  # type: ignore[arg-type]
    )


def test_two_tools_and_a_subagent_make_one_tree(otel: Otel) -> None:
    plugin = otel.plugin()
    researcher = config(
        plugin, ScriptedModel(default="three sources"), name="researcher", tools=[]
    ).build()

    async def research(topic: str, ctx: RuntimeContext) -> str:
        """Ask the research subagent."""
        return (await researcher.call(topic, ctx.derive(session_id="main/research"))).text

    model = ScriptedModel([two_calls(), tool_call("research", topic="otel"), "done"])
    lead = config(plugin, model, name="lead", tools=[add, lookup, research]).build()
    reply = lead.call_sync("go", RuntimeContext(user_id="ann", session_id="main"))
    assert reply.text == "done"
    persist = ("hookagent.state.persist", [])
    load = ("hookagent.state.load", [])
    assert otel.tree() == [
        (
            "invoke_agent lead",
            [
                load,
                ("chat scripted", []),
                ("execute_tool add", []),
                ("execute_tool lookup", []),
                ("chat scripted", []),
                (
                    "execute_tool research",
                    [("invoke_agent researcher", [load, ("chat scripted", []), persist])],
                ),
                ("chat scripted", []),
                persist,
            ],
        )
    ]
    [lead_span] = otel.named("invoke_agent lead")
    [sub_span] = otel.named("invoke_agent researcher")
    # the subagent keeps the parent's run_id and turn; its own session
    assert sub_span.attributes["hookagent.run_id"] == lead_span.attributes["hookagent.run_id"]
    assert sub_span.attributes["hookagent.session_id"] == "main/research"
    assert lead_span.attributes["hookagent.outcome"] == "COMPLETED"
    assert {s.status.status_code for s in otel.finished()} == {StatusCode.UNSET}
    assert len({s.context.trace_id for s in otel.finished()}) == 1
    # the load is timed: it starts with the run (its admission) and ends before the model
    [first_load, _] = sorted(otel.named("hookagent.state.load"), key=lambda s: s.start_time or 0)
    first_chat = min(otel.named("chat"), key=lambda s: s.start_time or 0)
    assert lead_span.start_time <= first_load.start_time <= first_load.end_time  # type: ignore[operator]
    assert first_load.end_time <= first_chat.start_time  # type: ignore[operator]
    assert first_load.attributes["hookagent.store.class"] == "InMemoryAgentStateStore"
    assert first_load.attributes["hookagent.state.version"] == 0


def test_run_span_attributes_without_opt_in(otel: Otel) -> None:
    response = ModelResponse(
        Msg.assistant(f"echo: {SECRET}"),
        usage={"input_tokens": 12, "output_tokens": 3},
        stop_reason="end_turn",
    )
    model = ScriptedModel([tool_call("lookup", key=SECRET), response])
    cfg = config(otel.plugin(), model, name="bot", system_prompt=f"secret prompt {SECRET}")
    cfg.build().call_sync(SECRET, RuntimeContext(user_id="ann", session_id="s1"))
    [run] = otel.named("invoke_agent")
    assert set(run.attributes) == {
        "gen_ai.operation.name",
        "gen_ai.agent.id",
        "gen_ai.agent.name",
        "gen_ai.conversation.id",
        "hookagent.agent_id",
        "hookagent.session_id",
        "hookagent.run_id",
        "hookagent.turn_id",
        "hookagent.state.loaded_version",
        "hookagent.outcome",
    }
    assert run.attributes["gen_ai.agent.name"] == "bot"
    assert run.attributes["gen_ai.conversation.id"] == "s1"
    first, second = otel.named("chat")
    assert second.attributes["gen_ai.usage.input_tokens"] == 12
    assert second.attributes["gen_ai.usage.output_tokens"] == 3
    assert second.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert second.attributes["gen_ai.request.model"] == "scripted"
    assert "gen_ai.usage.input_tokens" not in first.attributes  # the model said nothing
    [tool] = otel.named("execute_tool")
    assert tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["hookagent.tool.outcome"] == "success"
    # neither user content nor user_id anywhere: attributes, events, status
    for span in otel.finished():
        dump = repr(dict(span.attributes)) + repr(span.events) + repr(span.status.description)
        assert "4111" not in dump and "ann" not in dump, span.name


def test_content_and_user_id_only_when_opted_in(otel: Otel) -> None:
    model = ScriptedModel([tool_call("lookup", key="k1"), f"echo: {SECRET}"])
    plugin = otel.plugin(record_content=True, record_user_id=True)
    cfg = config(plugin, model, system_prompt="be brief")
    cfg.build().call_sync(SECRET, RuntimeContext(user_id="ann", session_id="s1"))
    [run] = otel.named("invoke_agent")
    assert run.attributes["user.id"] == "ann"
    first, second = otel.named("chat")
    assert SECRET in first.attributes["gen_ai.input.messages"]
    assert first.attributes["gen_ai.system_instructions"] == '"be brief"'
    assert '"tool_call"' in first.attributes["gen_ai.output.messages"]
    assert SECRET in second.attributes["gen_ai.output.messages"]
    [tool] = otel.named("execute_tool")
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"key": "k1"}'
    assert tool.attributes["gen_ai.tool.call.result"] == '"value of k1"'


def test_content_is_capped(otel: Otel) -> None:
    plugin = otel.plugin(record_content=True, max_content_chars=40)
    config(plugin, ScriptedModel(default="x" * 500)).build().call_sync(
        "y" * 500, RuntimeContext(session_id="s")
    )
    [chat] = otel.named("chat")
    assert len(chat.attributes["gen_ai.input.messages"]) == 40
    assert chat.attributes["gen_ai.output.messages"].endswith("…")


def test_a_failed_run_ends_its_spans_with_error_status(otel: Otel) -> None:
    model = ScriptedModel([ModelUnavailable("503 from the provider")])
    agent = config(otel.plugin(), model).build()
    with pytest.raises(ModelUnavailable):
        agent.call_sync("hi", RuntimeContext(session_id="s"))
    [run] = otel.named("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["hookagent.outcome"] == "FAILED"
    assert run.attributes["error.type"] == "ModelUnavailable"
    assert run.status.description == "ModelUnavailable"  # the message only when opted in
    [chat] = otel.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "ModelUnavailable"
    [persist] = otel.named("hookagent.state.persist")  # the input is still saved
    assert persist.attributes["hookagent.persist.outcome"] == "error"
    assert persist.status.status_code is StatusCode.UNSET


def test_a_failed_runs_error_message_only_when_content_is_opted_in(otel: Otel) -> None:
    model = ScriptedModel([ModelUnavailable(f"503: {SECRET}")])
    agent = config(otel.plugin(record_content=True), model).build()
    with pytest.raises(ModelUnavailable):
        agent.call_sync("hi", RuntimeContext(session_id="s"))
    [run] = otel.named("invoke_agent")
    assert run.status.description == f"ModelUnavailable: 503: {SECRET}"


@pytest.mark.anyio
async def test_an_interrupted_run_ends_its_spans_with_error_status(otel: Otel) -> None:
    started = anyio.Event()

    async def slow_report() -> str:
        """A tool that takes a long time."""
        started.set()
        await anyio.sleep(60)
        return "done"

    model = ScriptedModel([tool_call("slow_report"), "never"])
    agent = config(otel.plugin(), model, tools=[slow_report]).build()
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            reply = await agent.call("report", RuntimeContext(user_id="al", session_id="s1"))
            assert reply.metadata["generate_reason"] == "INTERRUPTED"

        tg.start_soon(run)
        await started.wait()
        agent.interrupt("al", "s1", "stop")
    [run_span] = otel.named("invoke_agent")
    assert run_span.status.status_code is StatusCode.ERROR
    assert run_span.attributes["hookagent.outcome"] == "INTERRUPTED"
    assert run_span.attributes["hookagent.interrupt_reason"] == "user"
    [tool] = otel.named("execute_tool")
    assert tool.attributes["hookagent.tool.outcome"] == "interrupted"
    assert tool.status.status_code is StatusCode.ERROR
    [persist] = otel.named("hookagent.state.persist")
    assert persist.attributes["hookagent.persist.outcome"] == "interrupted"
    assert persist.parent is not None and persist.parent.span_id == run_span.context.span_id
    [interrupts] = otel.metrics()["hookagent.run.interrupts"]
    assert interrupts.value == 1 and interrupts.attributes["hookagent.interrupt_reason"] == "user"


class Policy:
    """Denies ``lookup``, asks before ``add``: the otel middleware must sit outside."""

    @hookimpl
    def hookagent_wrap_tool_call(self) -> Middleware:
        async def policy(call, ctx, call_next):  # type: ignore[no-untyped-def]
            if call.use.name == "lookup":
                return error_result(call.use, "denied by policy", "denied")
            if call.use.name == "add" and not call.approved:
                return ask(call, "add?")
            return await call_next(call)

        return Middleware(policy, order=200)


def test_denied_and_suspended_tools_and_the_resumed_turn(otel: Otel) -> None:
    model = ScriptedModel([two_calls(), "sum is 3"])
    cfg = config(otel.plugin(), model)
    cfg.plugins.append(Policy())
    agent = cfg.build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    reply = agent.call_sync("go", ctx)
    assert reply.metadata["generate_reason"] == "SUSPENDED"
    tools = {s.attributes["gen_ai.tool.name"]: s for s in otel.named("execute_tool")}
    assert tools["lookup"].attributes["hookagent.tool.denied"] is True
    assert tools["lookup"].attributes["hookagent.tool.outcome"] == "denied"
    assert tools["add"].attributes["hookagent.tool.suspended"] is True
    assert tools["add"].attributes["hookagent.tool.suspend_kind"] == "confirm"
    [first] = otel.named("invoke_agent")
    assert first.attributes["hookagent.outcome"] == "SUSPENDED"
    assert first.attributes["hookagent.suspend_kind"] == "PERMISSION_ASKING"
    assert first.status.status_code is StatusCode.UNSET
    otel.spans.clear()
    done = agent.call_sync(answers=[Approve("c1")], ctx=ctx.derive(run_id=None))
    assert done.text == "sum is 3"
    [second] = otel.named("invoke_agent")
    assert second.attributes["hookagent.turn_id"] == first.attributes["hookagent.turn_id"]
    assert second.attributes["hookagent.run_id"] != first.attributes["hookagent.run_id"]
    [approved] = otel.named("execute_tool")
    assert approved.attributes["hookagent.tool.approved"] is True
    assert approved.attributes["hookagent.tool.outcome"] == "success"


def test_the_run_nests_under_the_applications_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    agent = config(otel.plugin(), ScriptedModel(default="ok")).build()
    with tracer.start_as_current_span("POST /chat"):
        agent.call_sync("hi", RuntimeContext(session_id="s"))
    assert otel.tree() == [
        (
            "POST /chat",
            [
                (
                    "invoke_agent agent",
                    [
                        ("hookagent.state.load", []),
                        ("chat scripted", []),
                        ("hookagent.state.persist", []),
                    ],
                )
            ],
        )
    ]


class Retry:
    """A retry plugin (order -100): the otel model middleware sits inside it."""

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        async def retry(request, ctx, call_next):  # type: ignore[no-untyped-def]
            try:
                return await call_next(request)
            except ModelUnavailable:
                return await call_next(request)

        return Middleware(retry, order=-100)


def test_each_provider_attempt_is_its_own_chat_span(otel: Otel) -> None:
    model = ScriptedModel([ModelUnavailable("503"), "second time lucky"])
    cfg = config(otel.plugin(), model)
    cfg.plugins.append(Retry())
    assert cfg.build().call_sync("hi", RuntimeContext(session_id="s")).text == "second time lucky"
    failed, ok = otel.named("chat")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "ModelUnavailable"
    assert ok.status.status_code is StatusCode.UNSET
    [run] = otel.named("invoke_agent")
    assert run.attributes["hookagent.outcome"] == "COMPLETED"
