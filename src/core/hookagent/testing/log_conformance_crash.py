"""Conformance checks of what two processes and a crash can do to a log: a second handle,
races, orphan commits (the commit written, the head never moved) and a head pointing at a
commit that is missing (it must fail closed)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from ..errors import LeaseHeld, LogCorrupt, LogFenced, StalePrefix
from ..sessionlog.base import LogWriter, SessionLog
from .log_conformance_hooks import LONG, LogHooks, batch, seqs, snapshot, tags, written

ROUNDS = 5


async def _grab(handle: SessionLog, owner: str, session: str, out: dict[str, list[str]]) -> None:
    await anyio.lowlevel.checkpoint()
    try:
        await handle.acquire("u", session, owner, LONG)
        out["won"].append(owner)
    except LeaseHeld:
        out["held"].append(owner)
    except Exception as exc:  # a lost race must be LeaseHeld, not a database error
        out["errors"].append(f"{owner}: {type(exc).__name__}: {exc}")


class CrashLogConformance(LogHooks):
    """Mixed into ``SessionLogConformance``."""

    # ------------------------------------------------------------------ two handles

    async def test_a_commit_through_one_handle_is_read_through_another(
        self, log: SessionLog
    ) -> None:
        async with self.other(log) as other:
            writer = await written(log, "u", "s", 2)
            assert await other.head("u", "s") == await log.head("u", "s")
            assert tags(await other.read_after("u", "s", 0)) == ["b0.0", "b0.1"]
            await other.commit(writer, "b1", 2, batch("b1", 1))  # a writer is a value
            assert tags(await log.read_after("u", "s", 1)) == ["b0.1", "b1.0"]
            assert (await log.head("u", "s")).commit_id == "b1"
            assert (await other.list_session_ids("u")).session_ids == ("s",)

    async def test_a_lease_taken_through_one_handle_blocks_another(self, log: SessionLog) -> None:
        async with self.other(log) as other:
            writer = await log.acquire("u", "s", "a", LONG)
            with pytest.raises(LeaseHeld):
                await other.acquire("u", "s", "b", LONG)
            await other.seal("u", "s", "a")
            assert await log.is_sealed("u", "s", "a")
            with pytest.raises(LogFenced):
                await log.commit(writer, "late", 0, batch("late", 1))
            taken = await other.acquire("u", "s", "b", LONG)
            assert taken.epoch == writer.epoch + 1

    async def test_concurrent_acquires_from_two_handles_have_one_winner(
        self, log: SessionLog
    ) -> None:
        async with self.other(log) as other:
            for r in range(ROUNDS):
                session = f"race{r}"
                out: dict[str, list[str]] = {"won": [], "held": [], "errors": []}
                async with anyio.create_task_group() as tg:
                    for i in range(6):
                        tg.start_soon(_grab, (log, other)[i % 2], f"o{i}", session, out)
                won = out["won"]
                assert len(won) == 1 and len(out["held"]) == 5, f"round {r}: {out}"
                head = await other.head("u", session)
                assert (head.owner, head.epoch) == (won[0], 1), f"round {r}: {head}"

    async def test_racing_writers_with_a_takeover_keep_the_log_contiguous(
        self, log: SessionLog
    ) -> None:
        async with self.other(log) as other:
            old = await log.acquire("u", "s", "run", LONG)
            accepted: dict[str, tuple[int, int, int]] = {}  # batch -> (first, last, size)
            fenced: list[str] = []
            takeover = anyio.Event()

            async def write(handle: SessionLog, writer: LogWriter, name: str, count: int) -> None:
                seq = (await handle.head("u", "s")).seq
                for n in range(count):
                    await anyio.lowlevel.checkpoint()
                    batch_id, size = f"{name}{n}", 1 + n % 3
                    try:
                        got = await handle.commit(writer, batch_id, seq, batch(batch_id, size))
                    except StalePrefix as exc:
                        seq = exc.actual
                        continue
                    except LogFenced:
                        fenced.append(batch_id)
                        continue
                    accepted[batch_id] = (got.first_seq, got.last_seq, size)
                    seq = got.last_seq
                    if name == "old" and len(accepted) >= 3:
                        takeover.set()  # the race starts with the old writer mid-way
                takeover.set()

            async def take_over() -> None:
                await takeover.wait()
                new = await other.acquire("u", "s", "run", LONG)  # the run restarted elsewhere
                await write(other, new, "new", 12)

            async with anyio.create_task_group() as tg:
                tg.start_soon(write, log, old, "old", 12)
                tg.start_soon(take_over)
            new_batches = [b for b in accepted if b.startswith("new")]
            assert new_batches, "the new writer committed nothing"
            first_new = min(accepted[b][0] for b in new_batches)
            late = [b for b in accepted if b.startswith("old") and accepted[b][1] >= first_new]
            assert not late, f"the fenced writer's commits landed after the takeover: {late}"
            assert fenced, "the old writer was never fenced"
            events = await other.read_after("u", "s", 0)
            head = await log.head("u", "s")
            assert seqs(events) == list(range(1, head.seq + 1)), "the log is not contiguous"
            assert head.seq == sum(size for _, _, size in accepted.values())
            for batch_id, (first, last, _) in accepted.items():
                got = [e for e in events if e.payload.get("tag") == batch_id]
                assert seqs(got) == list(range(first, last + 1)), f"batch {batch_id} at {seqs(got)}"
            refused = {e.payload.get("tag") for e in events} & set(fenced)
            assert not refused, f"fenced batches were stored: {refused}"

    async def test_concurrent_commits_at_one_seq_have_one_winner(self, log: SessionLog) -> None:
        async with self.other_or_same(log) as other:
            writer = await written(log, "u", "s", 1)
            won: list[str] = []
            stale: list[str] = []
            errors: list[str] = []

            async def commit(handle: SessionLog, batch_id: str) -> None:
                await anyio.lowlevel.checkpoint()
                try:
                    await handle.commit(writer, batch_id, 1, batch(batch_id, 2))
                    won.append(batch_id)
                except StalePrefix:
                    stale.append(batch_id)
                except Exception as exc:  # a lost race must be StalePrefix
                    errors.append(f"{batch_id}: {type(exc).__name__}: {exc}")

            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(commit, (log, other)[i % 2], f"c{i}")
            assert len(won) == 1 and len(stale) == 5, f"won {won}, stale {stale}, errors {errors}"
            assert tags(await log.read_after("u", "s", 1)) == [f"{won[0]}.0", f"{won[0]}.1"]
            assert (await log.head("u", "s")).seq == 3

    async def test_a_reader_never_sees_a_head_ahead_of_its_commit(self, log: SessionLog) -> None:
        """The commit's bytes are in place before the head moves: a reader polling while a
        writer commits never finds the head pointing at a missing commit."""
        async with self.other_or_same(log) as reader:
            writer = await log.acquire("u", "s", "w", LONG)
            done = anyio.Event()
            checks = 0

            async def write() -> None:
                seq = 0
                for n in range(25):
                    await anyio.lowlevel.checkpoint()
                    seq = (await log.commit(writer, f"b{n}", seq, batch(f"b{n}", 2))).last_seq
                done.set()

            async def read() -> None:
                nonlocal checks
                while not done.is_set():
                    head = await reader.head("u", "s")
                    try:
                        events = await reader.read_after("u", "s", 0)
                    except LogCorrupt as exc:
                        raise AssertionError(
                            f"a reader saw the head before its commit: {exc}"
                        ) from exc
                    got = seqs(events)
                    assert got == list(range(1, len(got) + 1)), f"a reader saw gaps: {got}"
                    assert len(got) >= head.seq, f"head at {head.seq}, {len(got)} events read"
                    checks += 1
                    await anyio.lowlevel.checkpoint()

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                tg.start_soon(write)
            assert checks > 0, "the reader never ran"

    # ------------------------------------------------------------------ crashes

    async def test_an_orphan_is_invisible(self, log: SessionLog) -> None:
        await written(log, "u", "s", 2)
        before = await snapshot(log, "u", "s")
        await self.orphan(log, "u", "s", "orphan", batch("orphan", 3))
        assert await snapshot(log, "u", "s") == before, "an orphan moved the head or was read"
        assert await log.read_after("u", "s", 2) == [], "read_after returned an orphan"
        assert await log.read_after("u", "s", 2, 1) == []
        assert seqs(await log.read_after("u", "s", 1, 10)) == [2]
        await log.acquire("u", "fresh", "w", LONG)  # a crash in a session's first commit
        await self.orphan(log, "u", "fresh", "first", batch("first", 1))
        assert await log.read_after("u", "fresh", 0) == []
        assert (await log.head("u", "fresh")).seq == 0
        assert (await log.list_session_ids("u")).session_ids == ("s",), "an orphan was listed"

    async def test_an_orphan_is_not_a_prior_for_idempotency(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 2)
        await self.orphan(log, "u", "s", "x", batch("orphan", 3))
        result = await log.commit(writer, "x", 2, batch("retry", 1))  # other content: no conflict
        assert (result.first_seq, result.last_seq, result.duplicate) == (3, 3, False), f"{result}"
        assert tags(await log.read_after("u", "s", 2)) == ["retry.0"]
        same = batch("same", 2)
        await self.orphan(log, "u", "s", "y", same)
        again = await log.commit(writer, "y", 3, same)  # the same content: a real commit
        assert (again.first_seq, again.last_seq, again.duplicate) == (4, 5, False), f"{again}"
        assert tags(await log.read_after("u", "s", 3)) == ["same.0", "same.1"]

    async def test_an_orphan_is_overwritten_by_the_next_commit(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 2)
        await self.orphan(log, "u", "s", "orphan", batch("orphan", 3))
        await log.commit(writer, "next", 2, batch("next", 1))  # seq 3 only
        await log.commit(writer, "then", 3, batch("then", 1))  # seq 4: the orphan's old place
        assert tags(await log.read_after("u", "s", 0)) == ["b0.0", "b0.1", "next.0", "then.0"]
        assert seqs(await log.read_after("u", "s", 0)) == [1, 2, 3, 4]
        result = await log.commit(writer, "orphan", 4, batch("other", 2))  # its batch id is free
        assert (result.first_seq, result.duplicate) == (5, False)
        assert tags(await log.read_after("u", "s", 4)) == ["other.0", "other.1"]

    async def test_a_head_past_its_commits_fails_closed(self, log: SessionLog) -> None:
        await written(log, "u", "s", 2)
        await self.bad_head(log, "u", "s", 4)
        for after in (0, 1, 2, 3):
            with pytest.raises(LogCorrupt):
                await log.read_after("u", "s", after)
        read, after = [], 0  # a paging reader is told too, never handed a short history
        with pytest.raises(LogCorrupt):
            while page := await log.read_after("u", "s", after, 1):
                read += seqs(page)
                after = page[-1].seq
            raise AssertionError(f"paging stopped silently after {read} with the head at 4")
        await log.acquire("u", "t", "w", LONG)
        await self.bad_head(log, "u", "t", 3)  # no commit at all
        with pytest.raises(LogCorrupt):
            await log.read_after("u", "t", 0)

    async def test_a_gap_under_the_head_fails_closed(self, log: SessionLog) -> None:
        writer = await written(log, "u", "s", 2)
        await self.bad_head(log, "u", "s", 4)
        await log.commit(writer, "b1", 4, batch("b1", 1))  # seqs 3..4 missing under it
        for after in (0, 1, 2):
            with pytest.raises(LogCorrupt):
                await log.read_after("u", "s", after)
        first = await log.acquire("u", "t", "w", LONG)
        await self.bad_head(log, "u", "t", 2)  # seqs 1..2 missing under the first commit
        await log.commit(first, "b0", 2, batch("b0", 1))
        for after in (0, 1):
            with pytest.raises(LogCorrupt):
                await log.read_after("u", "t", after)

    async def test_nothing_past_the_head_is_read(self, log: SessionLog) -> None:
        """A head inside a commit (seq 2 of 1..3): either ``LogCorrupt`` or the events up to
        the head, never one past it."""
        await written(log, "u", "s", 3)
        await self.bad_head(log, "u", "s", 2)
        for after, limit in ((0, None), (1, None), (2, None), (0, 10), (1, 1)):
            try:
                got = seqs(await log.read_after("u", "s", after, limit))
            except LogCorrupt:
                continue
            assert all(after < s <= 2 for s in got), f"read_after({after}) past the head: {got}"
