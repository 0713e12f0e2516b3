"""Metrics read back from the SDK's in-memory metric reader."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import (
    AgentConfig,
    InMemoryAgentStateStore,
    ModelResponse,
    ModelUnavailable,
    Msg,
    RuntimeContext,
    VersionConflict,
)
from hookagent.testing import ScriptedModel, tool_call

from .conftest import Otel


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def broken(key: str) -> str:
    """Always fails."""
    raise RuntimeError("boom")


def points(otel: Otel, name: str, **where: Any) -> list[Any]:
    found = otel.metrics().get(name, [])
    return [p for p in found if all(p.attributes.get(k) == v for k, v in where.items())]


def test_calls_latency_tokens_and_tool_outcomes(otel: Otel) -> None:
    reply = ModelResponse(Msg.assistant("ok"), usage={"input_tokens": 20, "output_tokens": 5})
    model = ScriptedModel([tool_call("lookup", key="a"), tool_call("broken", key="b"), reply])
    cfg = AgentConfig(
        name="bot",
        model=model,
        tools=[lookup, broken],
        plugins=[otel.plugin()],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    cfg.build().call_sync("hi", RuntimeContext(user_id="ann", session_id="s"))
    [runs] = points(otel, "hookagent.runs", **{"hookagent.outcome": "COMPLETED"})
    assert runs.value == 1 and runs.attributes["gen_ai.agent.name"] == "bot"
    [duration] = points(otel, "hookagent.run.duration")
    assert duration.count == 1 and duration.sum > 0
    [model_latency] = points(otel, "gen_ai.client.operation.duration")
    assert model_latency.count == 3
    assert model_latency.attributes["gen_ai.request.model"] == "scripted"
    [tokens_in] = points(otel, "gen_ai.client.token.usage", **{"gen_ai.token.type": "input"})
    [tokens_out] = points(otel, "gen_ai.client.token.usage", **{"gen_ai.token.type": "output"})
    assert (tokens_in.sum, tokens_out.sum) == (20, 5)
    [ok] = points(otel, "hookagent.tool.calls", **{"gen_ai.tool.name": "lookup"})
    [bad] = points(otel, "hookagent.tool.calls", **{"gen_ai.tool.name": "broken"})
    assert ok.attributes["hookagent.tool.outcome"] == "success" and ok.value == 1
    assert bad.attributes["hookagent.tool.outcome"] == "error" and bad.value == 1
    assert sum(p.count for p in points(otel, "hookagent.tool.duration")) == 2
    [save] = points(otel, "hookagent.state.save.duration")
    assert save.count == 1
    # no identifiers of a person or a session in metric attributes
    for name, found in otel.metrics().items():
        for point in found:
            assert "ann" not in repr(dict(point.attributes)), name
            assert not {"user.id", "hookagent.session_id", "hookagent.run_id"} & set(
                point.attributes
            ), name


def test_errors_by_type(otel: Otel) -> None:
    model = ScriptedModel([ModelUnavailable("503"), ModelUnavailable("503")])
    agent = AgentConfig(
        model=model,
        plugins=[otel.plugin()],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()
    for session in ("a", "b"):
        with pytest.raises(ModelUnavailable):
            agent.call_sync("hi", RuntimeContext(session_id=session))
    [errors] = points(otel, "hookagent.run.errors")
    assert errors.attributes["error.type"] == "ModelUnavailable" and errors.value == 2
    [failed] = points(otel, "gen_ai.client.operation.duration")
    assert failed.attributes["error.type"] == "ModelUnavailable" and failed.count == 2


class ConflictingStore(InMemoryAgentStateStore):
    """Another writer always got there first."""

    async def save_if_version(self, user_id, session_id, state, expected_version, **kw):  # type: ignore[no-untyped-def, override]
        raise VersionConflict(user_id, session_id, "state", expected_version, expected_version + 1)


def test_a_lost_save_is_a_conflict_and_an_error_span(otel: Otel) -> None:
    agent = AgentConfig(
        model=ScriptedModel(default="ok"),
        plugins=[otel.plugin()],
        state_store=ConflictingStore(),
        autoload_plugins=False,
    ).build()
    with pytest.raises(VersionConflict):
        agent.call_sync("hi", RuntimeContext(session_id="s"))
    [conflicts] = points(otel, "hookagent.state.conflicts")
    assert conflicts.value == 1
    [save] = points(otel, "hookagent.state.save.duration")
    assert save.attributes["error.type"] == "VersionConflict"
    [persist] = otel.named("hookagent.state.persist")
    assert persist.attributes["error.type"] == "VersionConflict"
    assert persist.attributes["hookagent.store.kind"] == "ConflictingStore"
    [errors] = points(otel, "hookagent.run.errors")
    assert errors.attributes["error.type"] == "VersionConflict"
