"""The conformance suite fails on copies of the example store with one class of bug planted
each (issue 13: the classes the suite used to miss), and passes on the example itself."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).parents[3] / "examples" / "store-plugin" / "hookagent_example_store"

# name -> (file, text in the example, planted text, the checks that must fail)
BUGS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "stale_cache": (
        "cache.py",
        "entry is None or entry[0] != generation or len(entry[1]) > count",
        "entry is None or len(entry[1]) > count",
        ("test_a_second_handle_never_reads_a_stale_cache",),
    ),
    "check_then_set": (
        "store.py",
        "        version = await self._db.run(\n",
        "        current = (await self.get_versioned(user_id, session_id, key)).version\n"
        "        if expected_version is not UNCONDITIONAL and expected_version != current:\n"
        "            raise VersionConflict(user_id, session_id, key, expected_version, current)\n"
        "        expected_version = UNCONDITIONAL  # the compare was made outside the write\n"
        "        version = await self._db.run(\n",
        ("test_a_race_through_separate_handles_has_one_winner",),
    ),
    "joined_keys": (
        "store.py",
        "return (encode_id(user_id), encode_id(session_id), encode_id(key))",
        'return (encode_id(user_id) + "_" + encode_id(session_id), "-", encode_id(key))',
        ("test_joined_ids_do_not_collide",),
    ),
    "fence_on_one_form": (
        "store.py",
        "            if fence is not None:\n",
        "            if fence is not None and expected is not UNCONDITIONAL:\n",
        ("test_the_fence_rule_on_every_save_form",),
    ),
    "same_epoch_other_owner": (
        "store.py",
        "fence.epoch < row[0] or (fence.epoch == row[0] and fence.owner != row[1])",
        "fence.epoch < row[0]",
        ("test_the_fence_rule_on_every_save_form",),
    ),
    "anonymous_look_alike": (
        "store.py",
        "return (encode_id(user_id), encode_id(session_id), encode_id(key))",
        'return (encode_id(user_id or "anonymous"), encode_id(session_id), encode_id(key))',
        ("test_anonymous_partition_against_look_alikes",),
    ),
    "empty_cursor": (
        "store.py",
        'if cursor:  # "" is the first page, like None',
        "if cursor is not None:",
        ("test_the_empty_cursor_is_the_first_page",),
    ),
    "edit_dropped": (
        "store.py",
        "            if row is not None and expected == current and 0 < base <= row[2]:\n",
        "            if row is not None and expected == current and base == 0 < row[2] <= len(history):\n"
        "                base, tail = row[2], [encode_msg(m) for m in history[row[2] :]]\n"
        "            if row is not None and expected == current and 0 < base <= row[2]:\n",
        # the writing handle caches what it was given: only another handle sees the loss
        ("test_an_edit_through_json_is_seen_by_a_second_handle",),
    ),
    "slot_binding_missing": (
        "store.py",
        "        check_state_slot(state, user_id, session_id, key)  # the state names this slot\n",
        "",
        ("test_a_state_of_another_slot_is_refused",),
    ),
    "loaded_slot_unchecked": (
        "store.py",
        "            check_loaded_slot(got.state, user_id, session_id, key)\n",
        "            pass\n",
        ("test_a_state_planted_under_another_slot_is_corrupt",),
    ),
    "newer_schema_overwritten": (
        "store.py",
        "                check_schema_writable(_stored_schema(row[3], ids), *ids)\n",
        "                pass\n",
        ("test_a_newer_schema_is_never_overwritten",),
    ),
}

CONFORMANCE = textwrap.dedent(
    """
    import sqlite3

    import pytest
    from hookagent.store import encode_id
    from hookagent.testing import StoreConformance
    from hookagent.testing.conformance_hooks import split_document
    from {package} import ExampleSQLiteStore


    class TestPlanted(StoreConformance):
        differential_steps = 60

        @pytest.fixture
        async def store(self, tmp_path):
            store = ExampleSQLiteStore(str(tmp_path / "agent.db"))
            yield store
            await store.aclose()

        async def open_handle(self, store):
            return ExampleSQLiteStore(store.path)

        async def plant_state(self, store, user_id, session_id, key, document, version):
            head, messages = split_document(document)
            slot = (encode_id(user_id), encode_id(session_id), encode_id(key))
            await store.exists(user_id, session_id, key)
            with sqlite3.connect(store.path, isolation_level=None) as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO heads VALUES (?, ?, ?, ?, 'planted', ?, ?)",
                    (*slot, version, len(messages), head),
                )
                conn.executemany(
                    "INSERT INTO messages VALUES (?, ?, ?, ?, ?)",
                    [(*slot, seq, body) for seq, body in enumerate(messages)],
                )
    """
)


def _plant(root: Path, name: str, file: str, old: str, new: str) -> None:
    package = root / f"planted_{name}"
    shutil.copytree(EXAMPLE, package, ignore=shutil.ignore_patterns("__pycache__"))
    source = (package / file).read_text()
    assert source.count(old) == 1, f"{name}: the example no longer holds {old!r}"
    (package / file).write_text(source.replace(old, new))
    test = CONFORMANCE.format(package=package.name)
    (root / f"test_planted_{name}.py").write_text(test)


def test_each_planted_bug_fails_its_check(pytester: pytest.Pytester) -> None:
    for name, (file, old, new, _) in BUGS.items():
        _plant(pytester.path, name, file, old, new)
    result = pytester.runpytest_subprocess(
        "-p", "anyio", "-q", "-p", "no:cacheprovider", "-rf", timeout=600
    )
    text = result.stdout.str()
    missed = [
        f"{name}::{check}"
        for name, (_, _, _, checks) in BUGS.items()
        for check in checks
        if f"FAILED test_planted_{name}.py::TestPlanted::{check}" not in text
    ]
    assert not missed, f"the suite did not catch: {missed}\n{text[-3000:]}"
