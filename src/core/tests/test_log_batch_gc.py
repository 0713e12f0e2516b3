"""A large commit (a history segment) decodes with the cyclic collector paused: its tens of
thousands of new objects would otherwise set off full collections over everything a cold
load has built so far. A small commit (a warm read) leaves the collector alone."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hookagent.sessionlog import LogEvent, batch
from hookagent.sessionlog.batch import decode_batch, decode_rows, encode_batch


def commit(n: int) -> bytes:
    return encode_batch(
        [LogEvent("app/x", {"text": "w" * 40, "i": i}, event_id=f"e{i}") for i in range(n)]
    )


@pytest.fixture
def collector_seen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the collector was enabled each time a commit's events were built."""
    seen: list[bool] = []
    real = batch.decode_events

    def watched(*a: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*a)

    monkeypatch.setattr(batch, "decode_events", watched)
    return seen


@pytest.mark.parametrize("decode", [decode_batch, decode_rows])
@pytest.mark.parametrize(("n", "paused"), [(400, True), (3, False)])
def test_only_a_large_commit_decodes_with_the_collector_paused(
    decode: Any, n: int, paused: bool, collector_seen: list[bool]
) -> None:
    data = commit(n)
    assert (len(data) >= 16 * 1024) is paused
    assert gc.isenabled()
    got = decode(data, 1)
    assert len(got) == n and [e[0] if type(e) is tuple else e.seq for e in got][-1] == n
    assert collector_seen == [not paused]
    assert gc.isenabled()  # and on again after


def test_a_damaged_large_commit_leaves_the_collector_on() -> None:
    data = commit(400)
    with pytest.raises(Exception, match="commit at seq 1"):
        decode_batch(data[:-2], 1)
    assert gc.isenabled()


def test_a_cold_reads_rows_decode_with_the_collector_paused(collector_seen: list[bool]) -> None:
    """``rows_after`` (a backend's cold read): thousands of small commits at once."""
    commits, first = [], 1
    for _ in range(50):
        commits.append((first, first + 2, commit(3)))
        first += 3
    got = batch.rows_after(commits, 0, first - 1)
    assert [r[0] for r in got] == list(range(1, first))
    assert collector_seen == [False] * 50
    assert gc.isenabled()


def test_commits_read_as_they_go_are_not_paused_across_the_reads() -> None:
    """An iterator of commits may do I/O between items: the collector stays on for it."""
    states: list[bool] = []

    def reading() -> Any:
        for k in range(3):
            states.append(gc.isenabled())  # where a backend would read the next commit
            yield (k * 3 + 1, k * 3 + 3, commit(3))

    got = batch.rows_after(reading(), 0, 9)
    assert [r[0] for r in got] == list(range(1, 10)) and states == [True] * 3
