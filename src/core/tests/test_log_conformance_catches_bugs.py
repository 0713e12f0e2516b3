"""The session-log conformance suite can fail: copies of the reference backend with one bug
planted each do not pass it, and each bug fails the checks named here."""

from __future__ import annotations

import re
import textwrap

import pytest

pytest_plugins = ["pytester"]

BUGGY = textwrap.dedent(
    """
    import anyio
    import attrs
    import pytest
    from hookagent.errors import LogCorrupt, StalePrefix
    from hookagent.sessionlog import InMemorySessionLog, LogWriter, decode_batch, rules
    from hookagent.sessionlog.rules import encode_commit
    from hookagent.testing import SessionLogConformance


    class NoLeaseCheck(InMemorySessionLog):
        '''(1) commit does not check the writer's lease.'''

        async def commit(self, writer, batch_id, expected_seq, events, *, finish=False):
            real = rules.check_holds
            rules.check_holds = lambda *args: None  # the check this backend forgot
            try:  # super().commit never awaits: nothing else runs while the rule is off
                return await super().commit(writer, batch_id, expected_seq, events, finish=finish)
            finally:
                rules.check_holds = real


    class ReusedBatchAccepted(InMemorySessionLog):
        '''(2) a batch_id committed before, resent with other content, is a new commit.'''

        async def commit(self, writer, batch_id, expected_seq, events, *, finish=False):
            _, digest = encode_commit(events)
            s = self._get(writer.user_id, writer.session_id)
            if s is not None and batch_id in s.by_batch:
                if s.commits[s.by_batch[batch_id]].digest != digest:
                    del s.by_batch[batch_id]  # compares nothing: forgets the first commit
            return await super().commit(writer, batch_id, expected_seq, events, finish=finish)


    class OrphanVisible(InMemorySessionLog):
        '''(3) read_after reads every stored commit, the head's or not.'''

        async def read_after(self, user_id, session_id, seq, limit=None):
            s = self._get(user_id, session_id)
            if s is None or not s.commits:
                return await super().read_after(user_id, session_id, seq, limit)
            head = s.head
            s.head = attrs.evolve(head, seq=max(head.seq, s.commits[-1].last_seq))
            try:
                return await super().read_after(user_id, session_id, seq, limit)
            finally:
                s.head = head


    class HeadFirst(InMemorySessionLog):
        '''(4) the head moves first, the commit's bytes are written a round trip later.'''

        async def commit(self, writer, batch_id, expected_seq, events, *, finish=False):
            result = await super().commit(writer, batch_id, expected_seq, events, finish=finish)
            if result.duplicate:
                return result
            with self._lock:
                s = self._get(writer.user_id, writer.session_id)
                s.starts.pop()
                commit = s.commits.pop()
                del s.by_batch[batch_id]
            await anyio.sleep(0.002)  # the second write
            with self._lock:
                s.starts.append(commit.first_seq)
                s.commits.append(commit)
                s.by_batch[batch_id] = len(s.commits) - 1
            return result


    class EpochNotIncremented(InMemorySessionLog):
        '''(5) acquire keeps epoch 1: a re-acquire does not fence the older writer.'''

        async def acquire(self, user_id, session_id, owner, lease_seconds):
            writer = await super().acquire(user_id, session_id, owner, lease_seconds)
            with self._lock:
                s = self._get(user_id, session_id)
                s.head = attrs.evolve(s.head, epoch=1)
            return attrs.evolve(writer, epoch=1)


    class ReadsPastHead(InMemorySessionLog):
        '''(6) read_after returns whole commits, events past the head included.'''

        async def read_after(self, user_id, session_id, seq, limit=None):
            s = self._get(user_id, session_id)
            reached = [c for c in s.commits if c.first_seq <= s.head.seq] if s else []
            if not reached or reached[-1].last_seq <= s.head.seq:
                return await super().read_after(user_id, session_id, seq, limit)
            head = s.head
            s.head = attrs.evolve(head, seq=reached[-1].last_seq)
            try:
                return await super().read_after(user_id, session_id, seq, limit)
            finally:
                s.head = head


    class AcquireCheckThenSet(InMemorySessionLog):
        '''(7) acquire decides on the head it read, and writes it a round trip later.'''

        async def acquire(self, user_id, session_id, owner, lease_seconds):
            s = self._make(user_id, session_id)
            now, sealed = self._clock(), owner in s.sealed
            head = rules.plan_acquire(s.head, user_id, session_id, owner, now, lease_seconds, sealed=sealed)
            await anyio.sleep(0.001)
            s.head = head  # written blindly over what changed since
            return LogWriter(user_id, session_id, owner, head.epoch, head.lease_until, head.seq)


    class CommitCheckThenSet(InMemorySessionLog):
        '''(8) commit compares expected_seq, then writes at the head of a round trip later.'''

        async def commit(self, writer, batch_id, expected_seq, events, *, finish=False):
            s = self._get(writer.user_id, writer.session_id)
            seen = s.head.seq if s else 0
            if expected_seq != seen:
                raise StalePrefix("stale", expected=expected_seq, actual=seen)
            await anyio.sleep(0.001)
            now = s.head.seq if s else expected_seq  # the check above is not repeated
            return await super().commit(writer, batch_id, now, events, finish=finish)


    class ShortHistory(InMemorySessionLog):
        '''(9) read_after returns what is there when the head's commit is missing.'''

        async def read_after(self, user_id, session_id, seq, limit=None):
            try:
                return await super().read_after(user_id, session_id, seq, limit)
            except LogCorrupt:
                s = self._get(user_id, session_id)
                events = [e for c in s.commits for e in decode_batch(c.data, c.first_seq)]
                return [e for e in events if seq < e.seq <= s.head.seq][:limit]


    class CommitAfterTheOne(InMemorySessionLog):
        '''(10) read_commits_after hands back the commit after the one holding seq + 1.'''

        async def read_commits_after(self, user_id, session_id, seqs):
            head, commits = await super().read_commits_after(user_id, session_id, seqs)
            after = [seq if c is None else c[1] for seq, c in zip(seqs, commits)]
            return head, (await super().read_commits_after(user_id, session_id, after))[1]


    class Hooks(SessionLogConformance):
        lease_short = 0.15

        async def another_handle(self, log):
            return log.another_handle()

        async def plant_orphan(self, log, user_id, session_id, batch_id, events):
            log.plant_orphan(user_id, session_id, batch_id, events)

        async def plant_head(self, log, user_id, session_id, seq):
            log.plant_head(user_id, session_id, seq)


    def suite(backend):
        class Test(Hooks):
            @pytest.fixture
            async def log(self):
                log = backend()
                yield log
                await log.aclose()

        return Test


    TestNoLeaseCheck = suite(NoLeaseCheck)
    TestReusedBatchAccepted = suite(ReusedBatchAccepted)
    TestOrphanVisible = suite(OrphanVisible)
    TestHeadFirst = suite(HeadFirst)
    TestEpochNotIncremented = suite(EpochNotIncremented)
    TestReadsPastHead = suite(ReadsPastHead)
    TestAcquireCheckThenSet = suite(AcquireCheckThenSet)
    TestCommitCheckThenSet = suite(CommitCheckThenSet)
    TestShortHistory = suite(ShortHistory)
    TestCommitAfterTheOne = suite(CommitAfterTheOne)
    TestReference = suite(InMemorySessionLog)


    class TestWithoutHooks(SessionLogConformance):
        @pytest.fixture
        async def log(self):
            return InMemorySessionLog()
    """
)

# planted bug -> the checks that must fail on it
CAUGHT: dict[str, set[str]] = {
    "NoLeaseCheck": {
        "test_a_taken_over_writer_cannot_commit",
        "test_an_expired_writer_cannot_commit",
        "test_reacquire_by_the_same_owner_fences_its_older_writer",
        "test_finish_ends_the_lease_and_seals_the_owner",
        "test_racing_writers_with_a_takeover_keep_the_log_contiguous",
    },
    "ReusedBatchAccepted": {
        "test_a_batch_id_reused_with_other_content_conflicts",
    },
    "OrphanVisible": {
        "test_an_orphan_is_invisible",
    },
    "HeadFirst": {
        "test_a_reader_never_sees_a_head_ahead_of_its_commit",
    },
    "EpochNotIncremented": {
        "test_acquire_increments_the_epoch",
        "test_reacquire_by_the_same_owner_fences_its_older_writer",
        "test_racing_writers_with_a_takeover_keep_the_log_contiguous",
    },
    "ReadsPastHead": {
        "test_nothing_past_the_head_is_read",
    },
    "AcquireCheckThenSet": {
        "test_concurrent_acquires_from_two_handles_have_one_winner",
    },
    "CommitCheckThenSet": {
        "test_concurrent_commits_at_one_seq_have_one_winner",
    },
    "ShortHistory": {
        "test_a_head_past_its_commits_fails_closed",
    },
    "CommitAfterTheOne": {
        "test_read_commits_after_is_a_point_read",
    },
}
HOOKED = {
    "test_a_commit_through_one_handle_is_read_through_another",
    "test_a_lease_taken_through_one_handle_blocks_another",
    "test_concurrent_acquires_from_two_handles_have_one_winner",
    "test_racing_writers_with_a_takeover_keep_the_log_contiguous",
    "test_an_orphan_is_invisible",
    "test_an_orphan_is_not_a_prior_for_idempotency",
    "test_an_orphan_is_overwritten_by_the_next_commit",
    "test_a_head_past_its_commits_fails_closed",
    "test_a_gap_under_the_head_fails_closed",
    "test_nothing_past_the_head_is_read",
    "test_read_rows_after_never_reads_an_orphan",
    "test_read_rows_after_fails_closed_where_read_after_does",
    "test_read_commits_after_never_reads_an_orphan",
    "test_read_commits_after_fails_closed_where_read_after_does",
}


def test_planted_bugs_fail_their_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_buggy=BUGGY)
    every = sorted(set().union(*CAUGHT.values()))
    nodes = [f"test_buggy.py::Test{bug}::{c}" for bug, checks in CAUGHT.items() for c in checks]
    nodes += [f"test_buggy.py::TestReference::{c}" for c in every]  # the checks can pass
    nodes.append("test_buggy.py::TestWithoutHooks")
    result = pytester.runpytest_subprocess(
        "-p", "anyio", "-q", "-p", "no:cacheprovider", "-rfs", *nodes, timeout=300
    )
    text = result.stdout.str()
    failed: dict[str, set[str]] = {}
    for cls, check in re.findall(r"FAILED test_buggy\.py::Test(\w+)::(test_\w+)", text):
        failed.setdefault(cls, set()).add(check)
    assert "Reference" not in failed, f"the reference failed: {failed['Reference']}\n{text}"
    assert "WithoutHooks" not in failed, f"failed without hooks: {failed['WithoutHooks']}"
    missed = {bug: sorted(checks - failed.get(bug, set())) for bug, checks in CAUGHT.items()}
    assert not any(missed.values()), f"the suite did not catch: {missed}\n{text[-4000:]}"
    skipped = re.findall(r"SKIPPED \[(\d+)\] [^\n]*: not run: define", text)
    assert sum(map(int, skipped)) == len(HOOKED), f"not-run checks: {skipped}\n{text[-2000:]}"
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == sum(map(len, CAUGHT.values())), outcomes
