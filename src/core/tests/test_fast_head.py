"""The head's fast path (``_fasthead``) gives exactly what the converter's path gives, and
hands everything else to it (which raises the same typed errors as before)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hookagent import codec
from hookagent._fasthead import fast_head_doc, fast_head_state
from hookagent.errors import InvalidState, StateTooLarge
from hookagent.messages import Msg
from hookagent.state import AgentState, PendingInteraction, ToolContext, TurnContext


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


COMMON = [
    AgentState(session_id="s"),
    AgentState(session_id="s", user_id="u", summary="a summary"),
    AgentState(session_id="s", tool_context=ToolContext(["g1", "g2"])),
    AgentState(session_id="s", shutdown_interrupted=True),
    AgentState(session_id="s", extensions={"perm": {"rules": [1, {"a": None}]}, "n": 3}),
    AgentState(session_id="s", extensions={"": "x", "extensions": [1]}),
    AgentState(session_id="s", extensions={"edge": _deep(63)}),
]


@pytest.mark.parametrize("state", COMMON)
def test_common_heads_take_the_fast_path_and_match_the_converter(state: AgentState) -> None:
    doc = fast_head_doc(state)
    assert doc is not None
    slow = codec.state_to_dict(state, with_context=False)
    assert doc == slow and list(doc) == list(slow)  # the same keys, in the same order
    data = codec.encode_head(state)
    assert data == orjson.dumps(slow)
    context = (Msg.user("hi"),)
    fast = fast_head_state(orjson.loads(data), context)
    assert fast is not None
    assert fast == codec.state_from_dict(orjson.loads(data), context=context)
    assert fast.context.unchanged_prefix == 1  # committed, as the converter's path makes it
    assert codec.decode_head(data, context) == fast


OTHER = [
    AgentState(
        session_id="s",
        turn_context=TurnContext("t", "m", [PendingInteraction("x", "t", "confirm")]),
    ),
    AgentState(session_id="s", tool_context=ToolContext(("g",))),  # type: ignore[arg-type]
    AgentState(session_id="s", extensions={"tool_context": 1}),
    AgentState(session_id="s", extensions={"deep": _deep(64)}),
    AgentState(session_id="s", schema_version=0),
]


@pytest.mark.parametrize("state", OTHER)
def test_other_heads_go_the_converters_way(state: AgentState) -> None:
    assert fast_head_doc(state) is None


def test_what_the_converter_refuses_is_still_refused() -> None:
    with pytest.raises(InvalidState):
        codec.encode_head(AgentState(session_id="s", extensions={"summary": 1}))
    with pytest.raises(StateTooLarge):
        codec.encode_head(AgentState(session_id="s", extensions={"deep": _deep(64)}))


BAD_DOCS: list[Any] = [
    [],
    {"session_id": "s"},  # no schema_version
    {"session_id": "s", "schema_version": True},
    {"session_id": 1, "schema_version": 1},
    {"session_id": "s", "user_id": None, "schema_version": 1},
    {"session_id": "s", "summary": 3, "schema_version": 1},
    {"session_id": "s", "shutdown_interrupted": 0, "schema_version": 1},
    {"session_id": "s", "tool_context": None, "schema_version": 1},
    {"session_id": "s", "tool_context": {"activated_groups": None}, "schema_version": 1},
    {"session_id": "s", "tool_context": {"activated_groups": [1]}, "schema_version": 1},
    {"session_id": "s", "tool_context": {"other": []}, "schema_version": 1},
    {"session_id": "s", "tool_context": {"activated_groups": "g"}, "schema_version": 1},
    {"session_id": "s", "schema_version": 1, "sec": _deep(64)},
    {"session_id": "s", "schema_version": 2},
]


@pytest.mark.parametrize("doc", BAD_DOCS)
def test_a_damaged_head_is_refused_as_before(doc: Any) -> None:
    assert fast_head_state(doc, ()) is None
    with pytest.raises(InvalidState):
        codec.decode_head(orjson.dumps(doc), ())


def test_decoded_fields_are_the_documents() -> None:
    doc = {
        "session_id": "s",
        "user_id": "u",
        "summary": None,
        "context": [{"ignored": True}],  # a head's context is the store's, never the doc's
        "tool_context": {},
        "schema_version": 1,
        "plugin": {"k": [1]},
    }
    state = codec.decode_head(orjson.dumps(doc), ())
    assert state == codec.state_from_dict(orjson.loads(orjson.dumps(doc)), context=())
    assert (state.user_id, state.tool_context, state.extensions) == (
        "u",
        ToolContext(),
        {"plugin": {"k": [1]}},
    )
    assert len(state.context) == 0


def test_the_fast_head_knows_every_field_of_agent_state() -> None:
    """A field added to AgentState must be added to the fast head too (or it would be dropped
    from every head written in the common shape)."""
    import attrs
    from hookagent import _fasthead

    fields = frozenset(f.name for f in attrs.fields(AgentState)) - {"extensions"}
    assert fields == _fasthead._HEAD_KEYS | _fasthead._OTHER_KNOWN
