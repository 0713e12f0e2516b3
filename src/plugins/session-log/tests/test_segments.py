"""History segments (``segments.py``): a cold load reads the checkpoint, the segments it
names and the commits after them, and rebuilds what reading every commit rebuilds; a
segment no checkpoint names is ignored; one that disagrees with its checkpoint fails closed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hookagent import Msg
from hookagent.codec import encode_msg, encode_state
from hookagent.errors import LogCorrupt
from hookagent.sessionlog import CHECKPOINT, InMemorySessionLog, LogEvent
from hookagent_session_log import catalogue as c
from hookagent_session_log.admin import SessionLogAdmin
from hookagent_session_log.store import LogBackedStore
from hookagent_session_log.testing import _config, check_segmented_cold_load
from sessionlog_support import ctx

pytestmark = pytest.mark.anyio


async def test_a_segmented_session_loads_cold_as_it_was() -> None:
    log = InMemorySessionLog()
    seen = await check_segmented_cold_load(log)
    # 9 calls of 4 messages, K=4: a segment at the quiet point before each call's first flush
    assert seen["segments"] == seen["segment_events"] == 8


async def test_a_backend_without_the_fast_paths_loads_cold_as_it_was() -> None:
    """``read_rows_after`` and ``read_commits_after`` are optional: without them a cold
    load takes ``read_after`` (and the check a backend's tests run still passes)."""
    inner = InMemorySessionLog()

    class Plain:
        locality = inner.locality

        def __getattr__(self, name: str) -> Any:
            if name in ("read_rows_after", "read_commits_after"):
                raise AttributeError(name)
            return getattr(inner, name)

    seen = await check_segmented_cold_load(Plain())  # type: ignore[arg-type]
    assert seen["segments"] == 8


async def test_a_cold_load_reads_every_segment_at_once_then_decodes_them_in_one_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decoded between reads, each segment's objects are promoted by a collection of their
    own until a full collection of the heap runs inside the load; read in one go, decoded
    together, they are not. The collector is never paused across the read."""
    import gc

    from hookagent_session_log import store as store_mod

    log, live = await _recorded(calls=9)
    steps: list[tuple[str, bool]] = []

    class Reading:
        locality = log.locality

        def __getattr__(self, name: str) -> Any:
            return getattr(log, name)

        async def read_commits_after(self, u: str, s: str, seqs: Any) -> Any:
            steps.append(("read", gc.isenabled()))
            return await log.read_commits_after(u, s, seqs)

    real_point, real_apply = store_mod.point_read, store_mod.apply_segment

    def point_read(*args: Any, **kw: Any) -> Any:
        steps.append(("decode", gc.isenabled()))
        return real_point(*args, **kw)

    def apply_segment(*args: Any) -> None:
        steps.append(("apply", gc.isenabled()))
        real_apply(*args)

    monkeypatch.setattr(store_mod, "point_read", point_read)
    monkeypatch.setattr(store_mod, "apply_segment", apply_segment)
    assert await _cold(Reading()) == live
    n = sum(1 for kind, _ in steps if kind == "decode")
    assert n >= 4, steps
    assert steps == [("read", True)] + [("decode", False)] * n + [("apply", False)] * n


async def _recorded(k: int = 4, calls: int = 5) -> tuple[InMemorySessionLog, bytes]:
    log = InMemorySessionLog()
    agent = _config(log, k).build()
    for i in range(calls):
        await agent.call(f"q{i}", ctx())
    return log, encode_state(await agent.get_agent_state("u", "s"))


async def _cold(log: Any) -> bytes:
    return encode_state((await LogBackedStore(log).get_versioned("u", "s")).state)


async def _raw_commit(log: Any, events: list[LogEvent]) -> None:
    head = await log.head("u", "s")
    writer = await log.acquire("u", "s", "test-writer-" + str(head.seq), 30.0)
    await log.commit(writer, "b" * 31 + str(head.seq % 10), head.seq, events, finish=True)


async def _newest_checkpoint(log: Any) -> LogEvent:
    head = await log.head("u", "s")
    return (await log.read_after("u", "s", head.checkpoint_seq - 1, 1))[0]


async def test_a_log_written_without_segments_loads_and_a_new_writer_starts_them() -> None:
    log, live = await _recorded(k=100_000)  # what an older writer leaves: no segment
    kinds = [e.type for e in await log.read_after("u", "s", 0)]
    assert c.SEGMENT not in kinds
    assert "segments" not in (await _newest_checkpoint(log)).payload
    assert await _cold(log) == live
    agent = _config(log, 4).build()  # a writer with segments goes on from it
    await agent.call("more", ctx())
    await agent.call("more again", ctx())
    live = encode_state(await agent.get_agent_state("u", "s"))
    assert (await _newest_checkpoint(log)).payload["segments"]
    assert await _cold(log) == live


async def test_a_segment_no_checkpoint_names_is_ignored() -> None:
    """The crash between a segment's commit and a checkpoint naming it (or a segment some
    other writer left): the load reads the commits, as without it."""
    log, live = await _recorded()
    cp = await _newest_checkpoint(log)
    msgs = [Msg.user("not in the history")] * 3
    stray = LogEvent(
        c.SEGMENT,
        {
            "v": 1,
            "from": 0,
            "to": 2,
            "first": 0,
            "ms": orjson.Fragment(b"[" + b",".join(encode_msg(m) for m in msgs) + b"]"),
            "turns": [],
        },
        False,
    )
    await _raw_commit(log, [stray])
    head = await log.head("u", "s")
    assert head.checkpoint_seq == cp.seq  # named by nothing
    assert await _cold(log) == live
    older = (await SessionLogAdmin(log).project("u", "s")).state()  # reads every commit
    assert encode_state(older) == live


def _bad_chains(chain: list[list[int]]) -> list[list[list[int]]]:
    last = chain[-1]
    return [
        [*chain[:-1], [last[0], last[1], last[2] + 1]],  # one message more than it holds
        [*chain[:-1], [last[0], last[1] - 1, last[2]]],  # another range
        [*chain[:-1], [last[0] - 1, last[1] - 1, last[2]]],  # not a segment's seq
        chain[1:],  # a chain that does not start at the base
    ]


@pytest.mark.parametrize("which", range(4))
async def test_a_segment_that_disagrees_with_its_checkpoint_fails_closed(which: int) -> None:
    log, _ = await _recorded()
    cp = await _newest_checkpoint(log)
    chain = cp.payload["segments"]
    assert len(chain) >= 2
    payload = {**cp.payload, "segments": _bad_chains(chain)[which]}
    await _raw_commit(log, [LogEvent(CHECKPOINT, payload, True)])
    with pytest.raises(LogCorrupt):
        await _cold(log)


async def test_a_segment_whose_records_are_short_fails_closed() -> None:
    """A segment event holding fewer records than the checkpoint counts."""
    log, _ = await _recorded()
    cp = await _newest_checkpoint(log)
    chain = cp.payload["segments"]
    head = await log.head("u", "s")
    seg = LogEvent(
        c.SEGMENT,
        {
            "v": 1,
            "from": chain[-1][1],
            "to": head.seq,
            "first": sum(link[2] for link in chain),
            "ms": orjson.Fragment(b"[" + encode_msg(Msg.user("one")) + b"]"),
            "turns": [],
        },
        False,
    )
    payload = {**cp.payload, "segments": [*chain, [head.seq + 1, head.seq, 2]]}
    await _raw_commit(log, [seg, LogEvent(CHECKPOINT, payload, True)])
    with pytest.raises(LogCorrupt):
        await _cold(log)


async def test_clear_context_starts_a_new_history_and_its_segments_are_not_read() -> None:
    log, _ = await _recorded()
    agent = _config(log, 4).build()
    await agent.clear_context("u", "s")
    cp = await _newest_checkpoint(log)
    assert "segments" not in cp.payload and cp.payload["base"] > 0
    reads: list[int] = []
    real = log.read_after

    async def read_after(u: str, s: str, seq: int, limit: int | None = None) -> Any:
        reads.append(seq)
        return await real(u, s, seq, limit)

    log.read_after = read_after  # type: ignore[method-assign]
    assert (await LogBackedStore(log).get_versioned("u", "s")).state.context == []
    assert reads == [cp.seq - 1]  # the checkpoint alone: no segment of the old history
    log.read_after = real  # type: ignore[method-assign]
    for i in range(3):
        await agent.call(f"after {i}", ctx())
    live = encode_state(await agent.get_agent_state("u", "s"))
    cp = await _newest_checkpoint(log)
    assert cp.payload["segments"][0][1] >= cp.payload["base"]  # the new history's own
    assert await _cold(log) == live


async def test_a_warm_reader_follows_a_writer_cutting_segments() -> None:
    """A second process's projection, kept warm while the writer cuts segments, gives what
    a cold load gives (and its chain is the newest checkpoint's)."""
    log = InMemorySessionLog()
    writer, reader = _config(log, 4).build(), _config(log.another_handle(), 4).build()
    for i in range(6):
        await writer.call(f"q{i}", ctx())
        warm = encode_state(await reader.get_agent_state("u", "s"))
        assert warm == await _cold(log)
    await reader.call("the reader writes now", ctx())
    assert encode_state(await writer.get_agent_state("u", "s")) == await _cold(log)


async def test_a_fork_and_an_export_of_a_segmented_session() -> None:
    log, live = await _recorded()
    admin = SessionLogAdmin(log)
    await admin.fork("u", "s", "s2")
    forked = (await LogBackedStore(log).get_versioned("u", "s2")).state
    assert forked.context == (await LogBackedStore(log).get_versioned("u", "s")).state.context
    assert encode_state(await admin.export_state("u", "s")) == live


def test_built_batch_hands_back_the_records_it_wrote() -> None:
    """What a segment joins is what the messages' commits hold, byte for byte."""
    from hookagent.sessionlog import built_batch, encode_batch
    from hookagent_session_log.recording import fact

    msgs = [Msg.user("hello"), Msg.assistant("a reply")]
    events = [
        fact(c.RUN_STARTED, {}, None, None),
        *(fact(c.MESSAGE, {"m": m}, None, None) for m in msgs),
    ]
    records: list[bytes | None] = [b"stale"]
    batch = built_batch(events, records)
    assert records == [None, *(encode_msg(m) for m in msgs)]
    assert batch.data == encode_batch(events)
    for record in records[1:]:
        assert record is not None and record in batch.data


def _planted(name: str, user: str, session: str) -> InMemorySessionLog:
    """A memory log holding a fixture's commits as an older hookagent wrote them."""
    import json
    from pathlib import Path

    from hookagent.sessionlog import LogHead
    from hookagent.sessionlog.memory import _Commit

    fixture = json.loads((Path(__file__).parent / "fixtures" / name).read_text())
    log = InMemorySessionLog()
    s = log._make(user, session)
    for first, last, batch_id, data in fixture["commits"]:
        s.starts.append(first)
        s.commits.append(_Commit(first, last, batch_id, "d" + batch_id, data.encode()))
        s.by_batch[batch_id] = len(s.commits) - 1
    last_batch = fixture["commits"][-1][2]
    s.head = LogHead(fixture["head"], 9, None, 0.0, last_batch, fixture["checkpoint_seq"])
    return log


@pytest.mark.parametrize(
    ("name", "user", "session"),
    [("log_format2_unsegmented.json", "alice", "s2"), ("log_format1.json", "alice", "s1")],
)
async def test_logs_written_before_segments_load_and_take_them(
    name: str, user: str, session: str
) -> None:
    """The fixtures: a format-2 log written before segments (3e94745, 4 calls with a tool)
    and a format-1 one; each loads cold as before, then a writer with K=2 cuts segments
    over their messages (encoding the ones it did not write) and a cold load reads them."""
    import json
    from pathlib import Path

    fixture = json.loads((Path(__file__).parent / "fixtures" / name).read_text())
    log = _planted(name, user, session)
    state = (await LogBackedStore(log).get_versioned(user, session)).state
    assert state is not None and [m.text for m in state.context] == fixture["texts"]
    agent = _config(log, 2).build()
    await agent.call("and now?", ctx(session, user))
    await agent.call("once more", ctx(session, user))
    live = await agent.get_agent_state(user, session)
    head = await log.head(user, session)
    cp = (await log.read_after(user, session, head.checkpoint_seq - 1, 1))[0]
    assert cp.payload["segments"][0][2] >= len(fixture["texts"])  # the old messages too
    cold = (await LogBackedStore(log).get_versioned(user, session)).state
    assert cold is not None and encode_state(cold) == encode_state(live)
    assert [m.text for m in cold.context][: len(fixture["texts"])] == fixture["texts"]


@pytest.mark.parametrize("k", [0, 1, "256", 2.0, True, 100_001])
def test_segment_messages_is_checked(k: Any) -> None:
    from hookagent import ConfigurationError
    from hookagent.testing import ScriptedModel
    from sessionlog_support import make_config

    with pytest.raises(ConfigurationError, match="segment_messages"):
        make_config(
            InMemorySessionLog(),
            ScriptedModel(["x"]),
            plugin_options={"session-log": {"segment_messages": k}},
        ).build()


async def test_a_segment_of_a_version_this_reader_does_not_know_is_read_as_its_commits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A later writer's segment (its range may hold events this reader would have to see):
    the load reads every commit from the base instead, and rebuilds the same state."""
    from hookagent_session_log import segments

    monkeypatch.setattr(segments, "SEGMENT_VERSION", 2)
    log, live = await _recorded()
    assert (await _newest_checkpoint(log)).payload["segments"]
    monkeypatch.setattr(segments, "SEGMENT_VERSION", 1)
    points: list[int] = []
    read_after = log.read_after

    async def counted(user_id: str, session_id: str, seq: int, limit: int | None = None) -> Any:
        if limit is None:
            points.append(seq)
        return await read_after(user_id, session_id, seq, limit)

    monkeypatch.setattr(log, "read_after", counted)
    monkeypatch.setattr(log, "read_rows_after", None, raising=False)
    assert await _cold(log) == live
    assert points == [0]  # the whole log from the base, not the tail after a segment


async def test_a_stretch_that_cannot_be_cut_is_not_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over the byte limit: no segment, the stretch marked, its records not kept; the
    session still loads cold as it was."""
    from hookagent_session_log import segments

    monkeypatch.setattr(segments, "SEGMENT_BYTES", 10)
    tried: list[int] = []
    cut = segments.cut

    def counting(proj: Any, *args: Any) -> Any:
        tried.append(proj.covered)
        return cut(proj, *args)

    monkeypatch.setattr("hookagent_session_log.recording.cut", counting)
    log, live = await _recorded(calls=4)
    kinds = [e.type for e in await log.read_after("u", "s", 0)]
    assert c.SEGMENT not in kinds
    assert tried == [0]  # one try for the stretch from message 0, then never again
    assert await _cold(log) == live
