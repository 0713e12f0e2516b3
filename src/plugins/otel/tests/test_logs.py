"""Log records emitted inside a run carry its run_id and turn_id (a tool's own logging too)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_otel import (
    CorrelationFilter,
    current_correlation,
    install_log_correlation,
    structlog_processor,
    uninstall_log_correlation,
)

from .conftest import Otel

tool_log = logging.getLogger("my_tools")


def sync_tool(key: str) -> str:
    """Runs in a worker thread."""
    tool_log.warning("sync tool working on %s", key)
    return "ok"


async def async_tool(key: str) -> str:
    """Runs in the run's task."""
    tool_log.warning("async tool working on %s", key)
    return "ok"


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def collected() -> Iterator[Collect]:
    handler = Collect()
    tool_log.addHandler(handler)
    yield handler
    tool_log.removeHandler(handler)


def run(otel: Otel, *calls: str) -> RuntimeContext:
    model = ScriptedModel([*(tool_call(c, key=c) for c in calls), "done"])
    ctx = RuntimeContext(user_id="ann", session_id="s1")
    AgentConfig(
        name="bot",
        model=model,
        tools=[sync_tool, async_tool],
        plugins=[otel.plugin()],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build().call_sync("go", ctx)
    return ctx


def test_the_one_liner_correlates_a_tools_own_log_lines(otel: Otel, collected: Collect) -> None:
    install_log_correlation()
    try:
        ctx = run(otel, "sync_tool", "async_tool")
        tool_log.warning("after the run")
    finally:
        uninstall_log_correlation()
    inside, inside_async, after = collected.records
    for record in (inside, inside_async):
        assert record.run_id == ctx.run_id  # type: ignore[attr-defined]
        assert record.turn_id == ctx.turn_id and ctx.turn_id  # type: ignore[attr-defined]
        assert record.session_id == "s1"  # type: ignore[attr-defined]
        assert record.agent_id == "bot"  # type: ignore[attr-defined]
        assert not hasattr(record, "user_id")
    tools = {s.attributes["gen_ai.tool.name"]: s for s in otel.named("execute_tool")}
    assert inside.span_id == format(tools["sync_tool"].context.span_id, "016x")  # type: ignore[attr-defined]
    assert inside.trace_id == format(tools["sync_tool"].context.trace_id, "032x")  # type: ignore[attr-defined]
    assert after.run_id == "" and after.turn_id == ""  # type: ignore[attr-defined]
    assert current_correlation() is None
    formatted = logging.Formatter("%(run_id)s %(turn_id)s %(message)s").format(inside)
    assert formatted == f"{ctx.run_id} {ctx.turn_id} sync tool working on sync_tool"


def test_the_filter_on_a_handler(otel: Otel, collected: Collect) -> None:
    collected.addFilter(CorrelationFilter())
    ctx = run(otel, "sync_tool")
    [record] = collected.records
    assert record.run_id == ctx.run_id and record.turn_id == ctx.turn_id  # type: ignore[attr-defined]


def test_without_correlation_records_have_no_run_fields(otel: Otel, collected: Collect) -> None:
    run(otel, "sync_tool")
    [record] = collected.records
    assert not hasattr(record, "run_id")


def test_the_structlog_processor(otel: Otel) -> None:
    seen: list[dict[str, object]] = []

    def tool(key: str) -> str:
        """Logs through a structlog-style processor chain."""
        seen.append(dict(structlog_processor(None, "info", {"event": "working"})))
        return "ok"

    ctx = RuntimeContext(session_id="s2")
    AgentConfig(
        model=ScriptedModel([tool_call("tool", key="k"), "done"]),
        tools=[tool],
        plugins=[otel.plugin()],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build().call_sync("go", ctx)
    [event] = seen
    assert event["event"] == "working"
    assert event["run_id"] == ctx.run_id and event["turn_id"] == ctx.turn_id
    assert event["session_id"] == "s2"
    assert structlog_processor(None, "info", {"event": "outside"})["run_id"] == ""
