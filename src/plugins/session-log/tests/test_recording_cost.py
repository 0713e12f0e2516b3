"""What a W1 call costs the recorder, counted (issue 21): state encodings, envelope checks
and log operations per call, so that a regression fails here rather than in the bench."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import orjson
import pytest
from hookagent import AgentState, InvalidState
from hookagent.codec import state_to_dict
from hookagent.sessionlog import (
    CommitResult,
    InMemorySessionLog,
    LogEvent,
    LogWriter,
    encode_batch,
)
from hookagent.sessionlog import batch as batch_mod
from hookagent.sessionlog.batch import BuiltBatch, built_batch
from hookagent.sessionlog.rules import encode_commit
from hookagent.testing import ScriptedModel, tool_call
from hookagent_session_log import SessionLogAdmin
from hookagent_session_log import recording as recording_mod
from sessionlog_support import ctx, make_config

pytestmark = pytest.mark.anyio


class Counting(InMemorySessionLog):
    """Counts the operations a run makes and checks every batch's bytes on the way."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.batches: list[Any] = []

    async def acquire(self, *a: Any, **kw: Any) -> Any:
        self.ops.append("acquire")
        return await super().acquire(*a, **kw)

    async def renew(self, *a: Any, **kw: Any) -> Any:
        self.ops.append("renew")
        return await super().renew(*a, **kw)

    async def commit(
        self,
        writer: LogWriter,
        batch_id: str,
        expected_seq: int,
        events: Sequence[LogEvent],
        *,
        finish: bool = False,
    ) -> CommitResult:
        self.ops.append("commit")
        self.batches.append(events)
        return await super().commit(writer, batch_id, expected_seq, events, finish=finish)


def w1_model(calls: int) -> ScriptedModel:
    script: list[Any] = []
    for i in range(calls):
        script += [tool_call("lookup", key=i), f"found v{i}"]
    return ScriptedModel(script)


async def test_a_w1_call_encodes_the_state_once_and_checks_no_envelope_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encodings, checks = [0], [0]
    real_encode, real_doc = state_to_dict, batch_mod._check

    def encode(*a: Any, **kw: Any) -> Any:
        encodings[0] += 1
        return real_encode(*a, **kw)

    def doc(*a: Any, **kw: Any) -> Any:
        checks[0] += 1
        return real_doc(*a, **kw)

    monkeypatch.setattr("hookagent_session_log.recording.state_to_dict", encode)
    monkeypatch.setattr(batch_mod, "_check", doc)
    log = Counting()
    agent = make_config(log, w1_model(12)).build()
    per_call = []
    for i in range(12):
        before_enc, before_ops = encodings[0], len(log.ops)
        await agent.call(f"look up {i}", ctx())
        per_call.append((encodings[0] - before_enc, log.ops[before_ops:]))
    for enc, ops in per_call[1:]:
        # the first flush of a run decides on the full encoding; the 3 after it on the
        # fingerprint (nothing but the history changed)
        assert enc == 1
        assert ops == ["acquire", "commit", "commit", "commit", "commit"]
    assert checks[0] == 0  # every batch was a BuiltBatch: encode_batch's checks never ran
    assert all(type(b) is BuiltBatch for b in log.batches)
    for b in log.batches:  # the bytes are encode_batch's, byte for byte
        assert b.data == encode_batch(list(b))
    # and what was read back is what was written: the facts, in order
    kinds = [e.type for e in await SessionLogAdmin(log).events("u", "s")]
    assert kinds.count("state/checkpoint") == 1 and kinds.count("run/finished") == 12


async def test_a_section_changed_in_place_is_checkpointed_on_a_warm_fingerprint() -> None:
    from hookagent.sessionlog import CHECKPOINT
    from hookagent_session_log.projection import Projection

    log = InMemorySessionLog()
    writer = await log.acquire("u", "s", "run-1", 60)
    state = AgentState(session_id="s", user_id="u", extensions={"acme": {"n": 1}})
    rec = recording_mod.Recording(log, writer, Projection("u", "s"), 60.0, run_id="run-1")
    await rec.flush(state)  # the log's first checkpoint
    await rec.flush(state, [rec.fact("model/dispatch", {})])
    assert rec.encodings == 1  # unchanged: decided on the fingerprint
    state.extensions["acme"]["n"] = 1.0  # equal in Python, not in JSON
    await rec.flush(state, [rec.fact("model/dispatch", {})])
    state.summary = "s"
    await rec.flush(state, [rec.fact("model/dispatch", {})])
    assert rec.encodings == 3
    checkpoints = [e for e in await log.read_after("u", "s", 0) if e.type == CHECKPOINT]
    assert len(checkpoints) == 3
    assert type(checkpoints[1].payload["state"]["acme"]["n"]) is float
    assert checkpoints[2].payload["state"]["summary"] == "s"
    assert rec.projection.head_bytes == orjson.dumps(checkpoints[2].payload["state"])


def test_fingerprint_tells_apart_what_json_tells_apart() -> None:
    fp = recording_mod.fingerprint
    a, b = AgentState(session_id="s"), AgentState(session_id="s")
    assert fp(a) == fp(b)
    b.extensions["x"] = {"n": 1}
    c = AgentState(session_id="s", extensions={"x": {"n": True}})
    d = AgentState(session_id="s", extensions={"x": {"n": 1.0}})
    assert len({fp(a), fp(b), fp(c), fp(d)}) == 4
    e = AgentState(session_id="s")
    e.tool_context.activated_groups.append("g")
    assert fp(e) != fp(a)
    e.turn_context = attrs.evolve(e.turn_context, iterations=1)
    assert fp(e) != fp(AgentState(session_id="s", tool_context=e.tool_context))
    bad = AgentState(session_id="s", extensions={"x": {1, 2}})  # not JSON: the encoding says so
    assert fp(bad) is None


def test_a_built_batch_encodes_as_encode_batch_does() -> None:
    from hookagent import Msg

    fact = recording_mod.fact
    cases = [
        [fact("run/started", {"agent_id": None}, "r", "t")],
        [
            fact("message/appended", {"m": Msg("user", "hi")}, "r", None),
            fact("x/y", None, None, None),
        ],
        [
            fact("model/dispatch", {"n": [1, {"a": 2}]}, "r", "t"),
            fact("run/finished", {}, "q", "t"),
        ],
        [fact("context/replaced", {"ms": [Msg("user", "a"), Msg("assistant", "b")]}, None, "t")],
    ]
    for events in cases:
        built = built_batch(events)
        assert built.data == encode_batch(events)
        assert encode_commit(built) == (built.data, batch_mod.batch_digest(built.data))
    with pytest.raises(InvalidState):
        built_batch([])
    deep: Any = []
    for _ in range(batch_mod.BATCH_DEPTH):
        deep = [deep]
    from hookagent.errors import StateTooLarge

    with pytest.raises(StateTooLarge):  # payloads are still depth-checked
        built_batch([fact("acme/x", {"v": deep}, None, None)])


def test_foreign_events_keep_every_check() -> None:
    bad = LogEvent("no-slash", {})
    with pytest.raises(InvalidState):
        encode_commit([bad])


def test_event_ids_are_fresh_v4_hex() -> None:
    ids = [recording_mod.event_id() for _ in range(600)]  # across refills
    assert len(set(ids)) == 600
    for i in ids:
        assert len(i) == 32 and int(i, 16) >= 0
        assert i[12] == "4" and i[16] in "89ab"
