"""The conformance suite every session-log backend subclasses (ours and third parties').

Usage, in a backend's tests::

    from hookagent.testing import SessionLogConformance

    class TestMyLog(SessionLogConformance):
        @pytest.fixture
        async def log(self):
            log = MyLog(...)          # fresh and empty for each test
            yield log
            await log.aclose()

Define ``another_handle``, ``plant_orphan`` and ``plant_head`` (``log_conformance_hooks``)
to run the cross-handle and crash checks; without them those checks are skipped as
"not run: ..." (``pytest -rs`` lists them). Set ``lease_short`` if your backend's clock
needs a longer lease for the expiry checks.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from ..errors import BatchConflict, LeaseHeld, LogFenced, OwnerSealed, StalePrefix
from ..sessionlog.base import CHECKPOINT, LogHead, SessionLog
from .log_conformance_crash import CrashLogConformance
from .log_conformance_hooks import LONG, batch, seqs, snapshot, tags, written
from .log_conformance_inputs import InputLogConformance
from .log_conformance_rows import RowsLogConformance


class SessionLogConformance(InputLogConformance, CrashLogConformance, RowsLogConformance):
    """Inherited tests; a subclass provides a ``log`` fixture yielding a fresh, empty log."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def log(self) -> Any:  # pragma: no cover - subclasses override
        raise NotImplementedError("subclass SessionLogConformance and define a `log` fixture")

    def near_now(self, value: float, seconds: float, what: str) -> None:
        expected = time.time() + seconds
        assert abs(value - expected) <= self.clock_tolerance, (
            f"{what}: lease_until {value} is not now + {seconds}s ({expected})"
        )

    # ------------------------------------------------------------------ leases

    async def test_a_log_never_written_has_an_empty_head(self, log: SessionLog) -> None:
        assert await log.head("u", "s") == LogHead(), "a log never written has LogHead()"
        assert await log.read_after("u", "s", 0) == [], "a log never written has no events"
        assert not await log.is_sealed("u", "s", "w"), "nobody is sealed on a new log"

    async def test_the_backend_declares_the_contract(self, log: SessionLog) -> None:
        assert isinstance(log, SessionLog), "the backend lacks methods of SessionLog"
        assert log.locality in ("process", "host", "shared"), f"locality {log.locality!r}"

    async def test_acquire_increments_the_epoch(self, log: SessionLog) -> None:
        first = await log.acquire("u", "s", "a", LONG)
        assert (first.epoch, first.owner, first.seq) == (1, "a", 0), f"first acquire: {first}"
        self.near_now(first.lease_until, LONG, "acquire")
        head = await log.head("u", "s")
        assert (head.epoch, head.owner, head.seq) == (1, "a", 0), f"head after acquire: {head}"
        assert head.lease_until == pytest.approx(first.lease_until, abs=1e-3)
        await log.commit(first, "b0", 0, batch("b0", 2))
        assert await log.release(first)
        second = await log.acquire("u", "s", "b", LONG)
        assert (second.epoch, second.seq) == (2, 2), f"acquire after release: {second}"
        third = await log.acquire("u", "s", "b", LONG)  # the same owner again
        assert third.epoch == 3, f"re-acquire by the same owner: epoch {third.epoch}, not 3"
        assert (await log.head("u", "s")).epoch == 3

    async def test_acquire_is_refused_while_another_owner_holds_the_lease(
        self, log: SessionLog
    ) -> None:
        held = await log.acquire("u", "s", "a", LONG)
        before = await log.head("u", "s")
        with pytest.raises(LeaseHeld):
            await log.acquire("u", "s", "b", LONG)
        assert await log.head("u", "s") == before, "a refused acquire changed the head"
        await log.commit(held, "b0", 0, batch("b0", 1))  # the holder is still the writer

    async def test_acquire_is_allowed_after_the_lease_expires(self, log: SessionLog) -> None:
        old = await log.acquire("u", "s", "a", self.lease_short)
        with pytest.raises(LeaseHeld):
            await log.acquire("u", "s", "b", LONG)
        await self.expire()
        new = await log.acquire("u", "s", "b", LONG)
        assert (new.epoch, new.owner) == (old.epoch + 1, "b"), f"takeover after expiry: {new}"

    async def test_reacquire_by_the_same_owner_fences_its_older_writer(
        self, log: SessionLog
    ) -> None:
        old = await log.acquire("u", "s", "w", LONG)
        new = await log.acquire("u", "s", "w", LONG)  # a restarted process, same run id
        assert new.epoch == old.epoch + 1
        with pytest.raises(LogFenced):
            await log.commit(old, "old", 0, batch("old", 1))
        with pytest.raises(LogFenced):
            await log.renew(old, LONG)
        assert await log.read_after("u", "s", 0) == [], "the fenced writer's commit was stored"
        await log.commit(new, "new", 0, batch("new", 1))
        assert tags(await log.read_after("u", "s", 0)) == ["new.0"]

    async def test_renew_keeps_the_epoch_and_extends_the_lease(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", 5.0)
        renewed = await log.renew(writer, 60.0)
        assert (renewed.epoch, renewed.owner) == (writer.epoch, writer.owner), f"{renewed}"
        assert renewed.lease_until > writer.lease_until + 50, "renew did not extend the lease"
        self.near_now(renewed.lease_until, 60.0, "renew")
        head = await log.head("u", "s")
        assert head.epoch == writer.epoch and head.lease_until == pytest.approx(
            renewed.lease_until, abs=1e-3
        ), f"head after renew: {head}"
        short = await log.acquire("u", "t", "w", self.lease_short)
        short = await log.renew(short, LONG)  # renewed in time: it outlives the first lease
        await self.expire()
        await log.commit(short, "b0", 0, batch("b0", 1))
        with pytest.raises(LeaseHeld):
            await log.acquire("u", "t", "x", LONG)

    async def test_renew_after_losing_the_lease_is_fenced(self, log: SessionLog) -> None:
        expired = await log.acquire("u", "s", "a", self.lease_short)
        taken = await log.acquire("u", "t", "a", self.lease_short)
        await self.expire()
        with pytest.raises(LogFenced):
            await log.renew(expired, LONG)
        await log.acquire("u", "t", "b", LONG)
        with pytest.raises(LogFenced):
            await log.renew(taken, LONG)
        head = await log.head("u", "t")
        assert (head.owner, head.epoch) == ("b", 2), f"a fenced renew changed the head: {head}"

    async def test_release_lets_another_owner_acquire(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "a", LONG)
        assert await log.release(writer) is True, "release of the holder returns True"
        head = await log.head("u", "s")
        assert head.owner is None or head.lease_until <= time.time(), f"lease kept: {head}"
        other = await log.acquire("u", "s", "b", LONG)
        assert other.epoch == writer.epoch + 1
        with pytest.raises(LogFenced):
            await log.commit(writer, "late", 0, batch("late", 1))

    async def test_release_by_a_lost_writer_returns_false_and_changes_nothing(
        self, log: SessionLog
    ) -> None:
        old = await log.acquire("u", "s", "a", LONG)
        new = await log.acquire("u", "s", "a", LONG)
        before = await log.head("u", "s")
        assert await log.release(old) is False, "release by a fenced writer returns False"
        assert await log.head("u", "s") == before, "release by a fenced writer changed the head"
        await log.commit(new, "b0", 0, batch("b0", 1))  # the holder still holds
        assert await log.release(new) is True
        assert await log.release(new) is False, "a second release returns False"

    async def test_seal_fences_the_owner_and_ends_its_lease(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "a", LONG)
        await log.seal("u", "s", "a")
        assert await log.is_sealed("u", "s", "a"), "is_sealed after seal"
        assert not await log.is_sealed("u", "s", "b"), "seal sealed another owner"
        assert not await log.is_sealed("u", "t", "a"), "seal sealed the owner on another session"
        with pytest.raises(OwnerSealed):
            await log.acquire("u", "s", "a", LONG)
        with pytest.raises(LogFenced):
            await log.commit(writer, "late", 0, batch("late", 1))
        other = await log.acquire("u", "s", "b", LONG)  # the sealed owner's lease ended
        assert other.epoch == writer.epoch + 1
        await log.seal("u", "t", "z")  # sealing ahead of any acquire
        with pytest.raises(OwnerSealed):
            await log.acquire("u", "t", "z", LONG)

    # ------------------------------------------------------------------ commits

    async def test_commits_have_contiguous_seqs(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", LONG)
        got = []
        seq = 0
        for n, size in enumerate((1, 3, 2)):
            result = await log.commit(writer, f"b{n}", seq, batch(f"b{n}", size))
            assert not result.duplicate
            got.append((result.first_seq, result.last_seq))
            assert result.head.seq == result.last_seq, f"result.head: {result.head}"
            seq = result.last_seq
        assert got == [(1, 1), (2, 4), (5, 6)], f"commit seqs: {got}"
        head = await log.head("u", "s")
        assert (head.seq, head.epoch, head.owner) == (6, writer.epoch, "w"), f"head: {head}"
        events = await log.read_after("u", "s", 0)
        assert seqs(events) == [1, 2, 3, 4, 5, 6]
        assert tags(events) == ["b0.0", "b1.0", "b1.1", "b1.2", "b2.0", "b2.1"]

    async def test_read_after_order_limit_and_ranges(self, log: SessionLog) -> None:
        await written(log, "u", "s", 2, 3, 1)  # seqs 1..6
        read = log.read_after
        assert seqs(await read("u", "s", 0, 2)) == [1, 2], "limit 2 from the start"
        assert seqs(await read("u", "s", 1, 3)) == [2, 3, 4], "a page across two commits"
        assert seqs(await read("u", "s", 3)) == [4, 5, 6], "from the middle of a commit"
        assert seqs(await read("u", "s", 5, 100)) == [6]
        assert await read("u", "s", 6) == [], "nothing after the head"
        assert await read("u", "s", 99) == [], "nothing after a seq past the head"
        paged, after = [], 0
        while page := await read("u", "s", after, 4):
            paged += seqs(page)
            after = page[-1].seq
        assert paged == [1, 2, 3, 4, 5, 6], f"paging read each event once, in order: {paged}"

    async def test_a_stale_expected_seq_is_refused_and_writes_nothing(
        self, log: SessionLog
    ) -> None:
        writer = await written(log, "u", "s", 2)
        before = await snapshot(log, "u", "s")
        for stale in (0, 1, 3, 10):
            with pytest.raises(StalePrefix) as info:
                await log.commit(writer, "x", stale, batch("x", 1))
            assert (info.value.expected, info.value.actual) == (stale, 2), str(info.value)
        assert await snapshot(log, "u", "s") == before, "a refused commit changed the log"
        result = await log.commit(writer, "x", 2, batch("other", 2))  # batch id "x" is free
        assert (result.first_seq, result.duplicate) == (3, False)

    async def test_a_retried_batch_is_a_duplicate(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", LONG)
        events = batch("b", 2)
        first = await log.commit(writer, "b", 0, events)
        before = await snapshot(log, "u", "s")
        again = await log.commit(writer, "b", 0, events)  # the reply was lost: a retry
        assert again.duplicate, "a retry with the same content is duplicate=True"
        assert (again.first_seq, again.last_seq) == (first.first_seq, first.last_seq)
        assert await snapshot(log, "u", "s") == before, "a duplicate wrote something"
        await log.commit(writer, "c", 2, batch("c", 1))
        late = await log.commit(writer, "b", 0, events)  # after another commit
        assert late.duplicate and (late.first_seq, late.last_seq) == (1, 2), f"{late}"
        assert (await log.head("u", "s")).commit_id == "c", "a duplicate moved commit_id"
        assert seqs(await log.read_after("u", "s", 0)) == [1, 2, 3]

    async def test_a_batch_id_reused_with_other_content_conflicts(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", LONG)
        await log.commit(writer, "b", 0, batch("b", 2))
        before = await snapshot(log, "u", "s")
        for other in (batch("b", 3), batch("b", 2), batch("other", 2)):  # new event ids too
            with pytest.raises(BatchConflict):
                await log.commit(writer, "b", 2, other)
        assert await snapshot(log, "u", "s") == before, "a conflicting batch was stored"

    async def test_a_retry_after_losing_the_lease_is_still_a_duplicate(
        self, log: SessionLog
    ) -> None:
        old = await log.acquire("u", "s", "w", LONG)
        events = batch("b", 1)
        await log.commit(old, "b", 0, events)
        await log.acquire("u", "s", "w", LONG)  # taken over before the reply arrived
        again = await log.commit(old, "b", 0, events)
        assert again.duplicate and again.first_seq == 1, "a committed batch is a duplicate first"

    async def test_a_taken_over_writer_cannot_commit(self, log: SessionLog) -> None:
        old = await log.acquire("u", "s", "a", self.lease_short)
        await log.commit(old, "b0", 0, batch("b0", 1))
        await self.expire()
        new = await log.acquire("u", "s", "b", LONG)  # another owner took the lease over
        await log.commit(new, "n0", 1, batch("n0", 1))
        before = await snapshot(log, "u", "s")
        for expected in (1, 2):
            with pytest.raises(LogFenced):
                await log.commit(old, "late", expected, batch("late", 1))
        assert await snapshot(log, "u", "s") == before, "a fenced commit was stored"
        await log.commit(new, "late", 2, batch("other", 1))  # its batch id was not recorded

    async def test_an_expired_writer_cannot_commit(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", self.lease_short)
        await log.commit(writer, "b0", 0, batch("b0", 1))
        await self.expire()
        with pytest.raises(LogFenced):
            await log.commit(writer, "late", 1, batch("late", 1))
        assert tags(await log.read_after("u", "s", 0)) == ["b0.0"], "an expired commit landed"
        head = await log.head("u", "s")
        assert (head.seq, head.commit_id) == (1, "b0"), f"an expired commit moved the head: {head}"

    async def test_finish_ends_the_lease_and_seals_the_owner(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "run1", LONG)
        events = batch("last", 2)
        result = await log.commit(writer, "last", 0, events, finish=True)
        assert (result.first_seq, result.last_seq) == (1, 2)
        again = await log.commit(writer, "last", 0, events, finish=True)  # the reply was lost
        assert again.duplicate and again.first_seq == 1, f"a retried final commit: {again}"
        head = await log.head("u", "s")
        assert head.seq == 2 and head.commit_id == "last", f"head after finish: {head}"
        assert head.owner is None or head.lease_until <= time.time(), f"lease kept: {head}"
        assert await log.is_sealed("u", "s", "run1"), "finish=True did not seal the owner"
        with pytest.raises(LogFenced):
            await log.commit(writer, "after", 2, batch("after", 1))
        with pytest.raises(OwnerSealed):
            await log.acquire("u", "s", "run1", LONG)
        nxt = await log.acquire("u", "s", "run2", LONG)  # no wait: the lease ended
        assert nxt.seq == 2
        assert tags(await log.read_after("u", "s", 0)) == ["last.0", "last.1"]

    async def test_checkpoint_seq_tracks_the_newest_checkpoint(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", LONG)
        assert (await log.head("u", "s")).checkpoint_seq == 0
        plain = batch("m", 1)
        steps = [
            (plain, 0),
            ([*batch("a", 1), *batch("c", 1, CHECKPOINT), *batch("a", 1)], 3),
            (batch("m2", 2), 3),
            ([*batch("c2", 2, CHECKPOINT), *batch("z", 1)], 8),
        ]
        seq = 0
        for n, (events, expected) in enumerate(steps):
            result = await log.commit(writer, f"b{n}", seq, events)
            seq = result.last_seq
            head = await log.head("u", "s")
            assert head.checkpoint_seq == expected == result.head.checkpoint_seq, (
                f"after batch {n}: checkpoint_seq {head.checkpoint_seq}, expected {expected}"
            )

    async def test_commit_id_is_the_last_batch_id(self, log: SessionLog) -> None:
        writer = await log.acquire("u", "s", "w", LONG)
        assert (await log.head("u", "s")).commit_id is None
        seq = 0
        for batch_id in ("first", "second", "third"):
            seq = (await log.commit(writer, batch_id, seq, batch(batch_id, 1))).last_seq
            assert (await log.head("u", "s")).commit_id == batch_id
