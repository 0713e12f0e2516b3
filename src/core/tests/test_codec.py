"""The codec: lossless round trips, and one typed error for every bad input."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hookagent import (
    AgentState,
    CorruptState,
    InvalidState,
    Msg,
    StateTooLarge,
    TextBlock,
    ToolResultBlock,
    UnsupportedSchemaVersion,
    codec,
)
from hookagent.state import SCHEMA_VERSION, ToolContext
from hookagent.testing import ENVELOPES, full_state
from hypothesis import assume, given, settings
from hypothesis import strategies as st

# ---------------------------------------------------------------------------- strategies

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    text,
    st.floats(allow_nan=False, allow_infinity=False),
)
json_value = st.recursive(
    json_scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)
    ),
    max_leaves=12,
)
_S = runpy.run_path(str(Path(__file__).with_name("codec_strategies.py")))
message = _S["messages"](text, json_value, text.filter(bool), st.floats(0, 2e9))


@st.composite
def states(draw: Any) -> AgentState:
    state = AgentState(
        session_id=draw(text.filter(bool)),
        user_id=draw(text),
        summary=draw(st.none() | text),
        context=draw(st.lists(message, max_size=5)),
        shutdown_interrupted=draw(st.booleans()),
    )
    state.tool_context = draw(st.builds(ToolContext, st.lists(text, max_size=3)))
    reserved = {
        "session_id",
        "user_id",
        "summary",
        "context",
        "tool_context",
        "turn_context",
        "shutdown_interrupted",
        "schema_version",
        "extensions",
    }
    state.extensions = draw(
        st.dictionaries(text.filter(lambda k: k and k not in reserved), json_value, max_size=3)
    )
    return state


# ---------------------------------------------------------------------------- round trips


@settings(max_examples=150, deadline=None)
@given(message)
def test_every_block_type_round_trips(msg: Msg) -> None:
    assert codec.decode_msg(codec.encode_msg(msg)) == msg


@settings(max_examples=100, deadline=None)
@given(states())
def test_every_state_section_round_trips(state: AgentState) -> None:
    text_ = state.to_json()
    back = AgentState.from_json(text_)
    assert back == state
    assert back.to_json() == text_


def test_unknown_plugin_section_survives_byte_for_byte() -> None:
    section = (
        '{"z":1,"a":[1.5,"x",{"lc":1,"type":"constructor"}],"n":null,"big":12345678901234567890}'
    )
    doc = full_state("u", "s").to_json()
    injected = doc[:-1] + ',"not_installed_plugin":' + section + "}"
    state = AgentState.from_json(injected)
    assert state.extensions["not_installed_plugin"]["a"][2] == {"lc": 1, "type": "constructor"}
    out = state.to_json()
    assert ('"not_installed_plugin":' + section) in out
    assert out == injected


@attrs.define
class _Todo:
    content: str
    status: str = "pending"


@attrs.define
class _Todos:
    todos: list[_Todo] = attrs.Factory(list)
    revision: int = 0


def test_plugin_sections_typed_access() -> None:
    state = AgentState("s")
    state.put_section("tasks_context", _Todos([_Todo("x")], 2))  # the harness names are free
    assert state.get_section("tasks_context", _Todos) == _Todos([_Todo("x")], 2)
    assert state.to_json().endswith(
        '"tasks_context":{"todos":[{"content":"x","status":"pending"}],"revision":2}}'
    )
    with pytest.raises(InvalidState):
        state.put_section("context", {})
    state.extensions["broken"] = {"todos": "nope"}
    with pytest.raises(InvalidState, match="broken"):
        state.get_section("broken", _Todos)


def test_history_is_runtime_only() -> None:
    state = AgentState.from_json(full_state("u", "s").to_json())
    assert state.context.unchanged_prefix == 0  # decoded from JSON: nothing is committed
    doc = orjson.loads(state.to_json())
    assert set(doc) == {
        "session_id",
        "user_id",
        "summary",
        "context",
        "tool_context",
        "shutdown_interrupted",
        "schema_version",
        "permission_context",  # the harness plugins' sections, plain JSON to the kernel
        "plan_mode_context",
        "tasks_context",
        "some_plugin",
    }


# ---------------------------------------------------------------------------- bad inputs
# (the pickle cases are the literal bytes pickle writes for {"a": 1}: nothing here unpickles)

VALID = full_state("u", "s").to_json()


def _bad_inputs() -> list[tuple[str, Any, type[Exception]]]:
    cases: list[tuple[str, Any, type[Exception]]] = []
    step = max(1, len(VALID) // 60)
    for offset in range(0, len(VALID) - 1, step):
        cases.append((f"truncated@{offset}", VALID[:offset], CorruptState))
    cases += [
        ("empty", "", CorruptState),
        ("whitespace", "   \n", CorruptState),
        ("bom", "\ufeff" + VALID, CorruptState),
        ("list", "[]", InvalidState),
        ("string", '"x"', InvalidState),
        ("null", "null", InvalidState),
        ("number", "42", InvalidState),
        ("invalid utf8", b'{"session_id":"\xff\xfe"}', CorruptState),
        ("lone surrogate text", '{"session_id":"\ud800"}', CorruptState),
        (
            "pickle",
            b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.",
            CorruptState,
        ),
        ("pickle proto 0", b"(dp0\nVa\np1\nI1\ns.", CorruptState),
        ("not str or bytes", 42, InvalidState),
        ("depth 10000", "[" * 10000 + "]" * 10000, CorruptState),
        (
            "depth 100 in a section",
            VALID[:-1] + ',"deep":' + "[" * 100 + "]" * 100 + "}",
            StateTooLarge,
        ),
        ("oversize", VALID[:-1] + ',"pad":"' + "x" * codec.MAX_STATE_BYTES + '"}', StateTooLarge),
        (
            "future schema",
            VALID.replace(f'"schema_version":{SCHEMA_VERSION}', '"schema_version":99'),
            UnsupportedSchemaVersion,
        ),
        (
            "schema as string",
            VALID.replace(f'"schema_version":{SCHEMA_VERSION}', '"schema_version":"1"'),
            InvalidState,
        ),
        (
            "negative schema",
            VALID.replace(f'"schema_version":{SCHEMA_VERSION}', '"schema_version":-1'),
            InvalidState,
        ),
        ("missing schema", '{"session_id":"s","context":[]}', InvalidState),
        ("missing session", f'{{"schema_version":{SCHEMA_VERSION},"context":[]}}', InvalidState),
        (
            "missing context",
            f'{{"schema_version":{SCHEMA_VERSION},"session_id":"s"}}',
            InvalidState,
        ),
        (
            "context as dict",
            f'{{"schema_version":{SCHEMA_VERSION},"session_id":"s","context":{{}}}}',
            InvalidState,
        ),
        (
            "session as int",
            f'{{"schema_version":{SCHEMA_VERSION},"session_id":5,"context":[]}}',
            InvalidState,
        ),
        (
            "bool as int",
            VALID.replace('"shutdown_interrupted":false', '"shutdown_interrupted":0'),
            InvalidState,
        ),
        (
            "groups as a string",
            VALID.replace('"activated_groups":["fs","web"]', '"activated_groups":"fs"'),
            InvalidState,
        ),
        ("unknown role", VALID.replace('"role":"user"', '"role":"root"', 1), InvalidState),
        ("unknown block", VALID.replace('"type":"text"', '"type":"exec"', 1), InvalidState),
        ("block not object", VALID.replace('"content":[{', '"content":[1,{', 1), InvalidState),
        (
            "extra key in msg",
            VALID.replace('"role":"user"', '"role":"user","__class__":"os.system"', 1),
            InvalidState,
        ),
        (
            "thinking in tool output",
            VALID.replace(
                '"output":[{"text":"found","type":"text"}',
                '"output":[{"thinking":"x","type":"thinking"}',
                1,
            ),
            InvalidState,
        ),
        ("nan", VALID.replace('"revision":3', '"revision":NaN'), CorruptState),
    ]
    for i, env in enumerate(ENVELOPES):
        cases.append((f"envelope {i} as state", env, InvalidState))
        cases.append(
            (
                f"envelope {i} as block",
                VALID.replace('"content":[{', '"content":[' + env + ",{", 1),
                InvalidState,
            )
        )
    return cases


@pytest.mark.parametrize(
    ("name", "data", "error"), _bad_inputs(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_bad_state_input_gives_one_typed_error(
    name: str, data: Any, error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        codec.decode_state(data)
    assert type(info.value) is error, f"{name}: got {type(info.value).__name__}: {info.value}"
    assert str(info.value)


def test_errors_name_the_field() -> None:
    with pytest.raises(InvalidState, match=r"activated_groups"):
        codec.decode_state(
            VALID.replace('"activated_groups":["fs","web"]', '"activated_groups":[1]')
        )
    with pytest.raises(InvalidState, match=r"context\[1\]"):
        codec.decode_state(VALID.replace('"role":"user"', '"role":"root"', 1))


def test_envelopes_inside_free_form_data_stay_inert() -> None:
    for env in ENVELOPES:
        doc = VALID.replace('"metadata":{"model":"x"', '"metadata":{"model":' + env, 1)
        state = codec.decode_state(doc)
        found = state.context[2].metadata["model"]
        assert isinstance(found, dict) and found == orjson.loads(env)


def test_limits_at_the_boundary() -> None:
    limit = len(VALID.encode())
    assert codec.decode_state(VALID, limit=limit).session_id == "s"
    with pytest.raises(StateTooLarge, match="over the limit"):
        codec.decode_state(VALID, limit=limit - 1)
    ok = {"k": 1}
    for _ in range(codec.MAX_DEPTH - 1):
        ok = {"k": ok}
    codec.check_depth(ok)
    with pytest.raises(StateTooLarge, match="deeper than 64"):
        codec.check_depth({"k": ok})


def test_encoding_refuses_what_cannot_be_stored() -> None:
    state = AgentState("s")
    state.context.append(Msg.user("x", metadata={"o": object()}))
    with pytest.raises(InvalidState, match="not JSON"):
        state.to_json()
    with pytest.raises(InvalidState):
        codec.encode_msg("not a message")  # type: ignore[arg-type]
    huge = Msg.user("x" * (codec.MAX_MESSAGE_BYTES + 1))
    with pytest.raises(StateTooLarge):
        codec.encode_msg(huge)


def test_upcasters_migrate_older_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    old = orjson.loads(VALID)
    old["schema_version"] = SCHEMA_VERSION - 1
    old["messages"] = old.pop("context")

    def upcast(doc: dict[str, Any]) -> dict[str, Any]:
        doc["context"] = doc.pop("messages")
        return doc

    with pytest.raises(UnsupportedSchemaVersion, match="no upcaster"):
        codec.decode_state(orjson.dumps(old))
    monkeypatch.setitem(codec.UPCASTERS, SCHEMA_VERSION - 1, upcast)
    state = codec.decode_state(orjson.dumps(old))
    assert state.schema_version == SCHEMA_VERSION and len(state.context) == 6


# ---------------------------------------------------------------------------- the fast path

mutation = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    text,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(text, st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(message, st.data())
def test_fast_path_is_never_looser_than_the_converter(msg: Msg, data: st.DataObject) -> None:
    """Mutate one field of an encoded message: the fast path either agrees with the
    converter or declines (and the converter decides)."""
    from hookagent._fastmsg import Mismatch, fast_msg

    doc = orjson.loads(orjson.dumps(codec.message_doc(msg)))  # format 1, a fresh copy
    targets: list[tuple[dict[str, Any], str]] = [(doc, k) for k in [*doc, "extra"]]
    for block in doc.get("content", []):
        targets += [(block, k) for k in [*block, "extra"]]
    where, key = data.draw(st.sampled_from(targets))
    where[key] = data.draw(mutation)
    try:
        fast = fast_msg(doc, codec._check_free)
    except Mismatch:
        return
    assert codec.structure(doc, Msg) == fast


@pytest.mark.parametrize(
    "doc",
    [
        {"role": "user", "id": "a", "timestamp": 1.0, "content": None},
        {"role": "user", "id": "a", "timestamp": 1.0, "metadata": None},
        {
            "role": "assistant",
            "id": "a",
            "timestamp": 1.0,
            "content": [{"type": "tool_use", "id": "c", "name": "t", "input": None}],
        },
        {"role": "user", "id": "a", "timestamp": True},
        {"role": "user", "id": "a", "timestamp": 1.0, "content": [{"type": "text", "x": "y"}]},
    ],
)
def test_fast_path_declines_explicit_nulls_and_near_misses(doc: dict[str, Any]) -> None:
    """An explicit null is not an omitted default: the fast path leaves it to the converter."""
    from hookagent._fastmsg import Mismatch, fast_msg

    with pytest.raises(Mismatch):
        fast_msg(doc, codec._check_free)
    with pytest.raises(InvalidState):
        codec.msg_from_dict(doc)


def test_fast_path_refuses_classes_it_cannot_build_without_init() -> None:
    """The fast path skips attrs ``__init__``; a validator on a message class must stop it."""
    import attrs
    from hookagent import _fastmsg

    @attrs.frozen
    class Validated:
        x: int = attrs.field(validator=attrs.validators.instance_of(int))

    with pytest.raises(RuntimeError, match="validator"):
        _fastmsg._plain(Validated)
    _fastmsg.check_bypass_is_sound()  # the real classes pass


def test_fast_path_deep_tool_input_is_depth_checked() -> None:
    deep: Any = 1
    for _ in range(100):
        deep = {"k": deep}
    doc = {
        "role": "assistant",
        "id": "a",
        "timestamp": 1.0,
        "content": [{"type": "tool_use", "id": "c", "name": "t", "input": {"flat": 1, "d": deep}}],
    }
    with pytest.raises(StateTooLarge):
        codec.msg_from_dict(doc)


@settings(max_examples=300, deadline=None)
@given(message)
def test_fast_encoder_writes_the_converters_bytes(msg: Msg) -> None:
    """The hand-built document has the converter's keys in the converter's order."""
    from hookagent._fastmsg import msg_doc

    doc = msg_doc(msg, codec._check_free)
    assert list(doc.items()) == list(codec.msg_to_dict(msg).items())
    assert orjson.dumps(codec.message_doc(msg)) == orjson.dumps(codec.msg_to_dict(msg))


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("where", ["metadata", "tool input"])
def test_what_encodes_always_decodes_at_the_depth_limit(where: str) -> None:
    """Free-form values are held to the same nesting limit when written as when read."""
    from hookagent.messages import ToolUseBlock

    def make(levels: int) -> Msg:
        value = {"v": _nested(levels)}  # exactly `levels` levels of objects
        if where == "metadata":
            return Msg.user("x", metadata=value)
        return Msg.assistant([ToolUseBlock("c", "t", value)])

    def state_of(msg: Msg) -> AgentState:
        state = AgentState(session_id="s")
        state.context.append(msg)
        return state

    limit = codec.MAX_DEPTH - 4
    ok = make(limit)
    assert codec.decode_msg(codec.encode_msg(ok)) == ok
    assert codec.decode_state(codec.encode_state(state_of(ok))).context == [ok]
    with pytest.raises(StateTooLarge):
        codec.encode_msg(make(limit + 1))
    with pytest.raises(StateTooLarge):
        codec.encode_state(state_of(make(limit + 1)))


def test_first_save_and_load_of_a_process_compile_nothing() -> None:
    """cattrs compiles hooks on first use (milliseconds each): the codec does it at import,
    so a cold resume's first call does not pay for it."""
    import subprocess
    import sys

    code = """
import cattrs.gen as gen
from hookagent import AgentState, Msg, codec
made = []
for name in ("make_dict_unstructure_fn_from_attrs", "make_dict_structure_fn_from_attrs"):
    real = getattr(gen, name)
    setattr(gen, name, lambda *a, _real=real, **k: (made.append(a[0]), _real(*a, **k))[1])
state = AgentState(session_id="s")
state.tool_context.activated_groups.append("g")
state.context.append(Msg.user("hi"))
codec.decode_head(codec.encode_head(state), list(state.context))
codec.decode_state(codec.encode_state(state))
print(len(made))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_an_idle_turn_is_not_written_and_a_suspended_one_round_trips() -> None:
    from hookagent.state import PendingInteraction, TurnContext

    state = AgentState(session_id="s")
    assert "turn_context" not in AgentState.from_json(state.to_json()).to_json()
    state.turn_context = TurnContext(
        "t1",
        "m1",
        [PendingInteraction("u1", "deploy", "confirm", "ok?", {"env": "prod"})],
        [ToolResultBlock("u0", "lookup", (TextBlock("v"),))],
        2,
    )
    back = AgentState.from_json(state.to_json())
    assert back.turn_context == state.turn_context and back.turn_context.suspended


# ---------------------------------------------------------------------------- what decodes, encodes

SECTION_NAMES = st.sampled_from(["", " ", "extensions", "context ", "x", "~", "null"]) | text
FIELDS = ["session_id", "user_id", "summary", "permission_context", "plan_mode_context"]
FIELDS += ["tasks_context", "tool_context", "turn_context", "shutdown_interrupted"]  # plugins' too
FIELDS += ["schema_version", "context"]


def _round_trips(data: bytes) -> None:
    """The property: if ``data`` decodes, the state encodes, and that decodes to the same."""
    try:
        state = codec.decode_state(data)
    except InvalidState:
        return
    out = codec.encode_state(state)
    back = codec.decode_state(out)
    assert back == state and back.extensions == state.extensions
    assert codec.encode_state(back) == out


@settings(max_examples=300, deadline=None)
@given(states(), st.data())
def test_what_decodes_encodes_and_round_trips(state: AgentState, data: st.DataObject) -> None:
    doc = orjson.loads(state.to_json())
    for _ in range(data.draw(st.integers(0, 3))):
        if data.draw(st.booleans()):  # a section under any name
            doc[data.draw(SECTION_NAMES)] = data.draw(json_value)
        else:  # a known field replaced by anything
            doc[data.draw(st.sampled_from(FIELDS))] = data.draw(mutation | json_value)
    if isinstance(doc.get("context"), list) and doc["context"] and data.draw(st.booleans()):
        msg = doc["context"][0]
        if isinstance(msg, dict):
            msg[data.draw(st.sampled_from([*msg, "extra"]))] = data.draw(mutation | json_value)
    try:
        raw = orjson.dumps(doc)
    except orjson.JSONEncodeError:  # an int past 64 bits: no JSON document to decode
        assume(False)
    _round_trips(raw)
