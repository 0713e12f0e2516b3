"""The conformance suite can fail: stores with planted bugs do not pass it."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

BUGGY = textwrap.dedent(
    """
    import pytest
    from hookagent.store import InMemoryAgentStateStore
    from hookagent.testing import StoreConformance


    class IgnoresUserId(InMemoryAgentStateStore):
        '''Keys slots by session only: every user shares them.'''

        async def get_versioned(self, user_id, session_id, key="agent_state"):
            return await super().get_versioned("shared", session_id, key)

        async def save_if_version(self, user_id, session_id, state, expected_version, **kw):
            return await super().save_if_version("shared", session_id, state, expected_version, **kw)

        async def exists(self, user_id, session_id, key="agent_state"):
            return await super().exists("shared", session_id, key)

        async def delete(self, user_id, session_id, key=None):
            return await super().delete("shared", session_id, key)

        async def list_session_ids(self, user_id, **kw):
            return await super().list_session_ids("shared", **kw)


    class LastWriterWins(InMemoryAgentStateStore):
        '''Ignores the expected version: a lost-update store.'''

        async def save_if_version(self, user_id, session_id, state, expected_version, **kw):
            from hookagent.store import UNCONDITIONAL
            return await super().save_if_version(user_id, session_id, state, UNCONDITIONAL, **kw)


    class RewritesNothing(InMemoryAgentStateStore):
        '''Keeps the stored history when the prefix changed (a broken append path).'''

        async def save_if_version(self, user_id, session_id, state, expected_version, **kw):
            from hookagent.state import History
            old = await super().get_versioned(user_id, session_id, kw.get("key", "agent_state"))
            if old.state is not None and len(state.context) < len(old.state.context):
                state.context = History(list(old.state.context), committed=True)
            return await super().save_if_version(user_id, session_id, state, expected_version, **kw)


    class TestIgnoresUserId(StoreConformance):
        @pytest.fixture
        def store(self):
            return IgnoresUserId()


    class TestLastWriterWins(StoreConformance):
        @pytest.fixture
        def store(self):
            return LastWriterWins()


    class TestRewritesNothing(StoreConformance):
        @pytest.fixture
        def store(self):
            return RewritesNothing()
    """
)


def test_planted_bugs_fail_the_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_buggy=BUGGY)
    result = pytester.runpytest_subprocess("-p", "anyio", "-q", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) > 0
    text = result.stdout.str()
    assert "TestIgnoresUserId::test_tenant_isolation FAILED" in text or (
        "FAILED test_buggy.py::TestIgnoresUserId::test_tenant_isolation" in text
    )
    assert "FAILED test_buggy.py::TestLastWriterWins::test_compare_and_set" in text
    assert (
        "FAILED test_buggy.py::TestLastWriterWins::test_concurrent_writers_exactly_one_wins" in text
    )
    assert "FAILED test_buggy.py::TestRewritesNothing::test_appends_then_rewrites" in text
