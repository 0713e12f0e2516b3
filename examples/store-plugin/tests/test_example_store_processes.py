"""Lost-update check across processes: concurrent load + append + compare-and-set loops.

Each worker process appends unique tokens, retrying on ``VersionConflict``, and reports the
version each save was acknowledged at. With a correct compare-and-set no version is
acknowledged twice, the final version counts every acknowledged save, and every token is in
the final history exactly once, in the order of its version.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hookagent import AgentState
from hookagent_example_store import ExampleSQLiteStore

pytestmark = pytest.mark.anyio

WORKERS = 4
SAVES_PER_WORKER = 40

WORKER = textwrap.dedent(
    """
    import json, sys
    import anyio
    from hookagent import Msg, VersionConflict
    from hookagent_example_store import ExampleSQLiteStore

    async def main(path: str, worker: str, n: int) -> None:
        store = ExampleSQLiteStore(path, busy_timeout=30.0)
        acks = []
        for i in range(n):
            token = f"{worker}-{i}"
            while True:
                got = await store.get_versioned("u", "s")
                got.state.context.append(Msg.user(token))
                try:
                    version = await store.save_if_version("u", "s", got.state, got.version)
                except VersionConflict:
                    continue
                acks.append([token, version])
                break
        await store.aclose()
        print(json.dumps(acks))

    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
    """
)


async def test_no_lost_updates_across_processes(tmp_path) -> None:
    path = str(tmp_path / "agent.db")
    store = ExampleSQLiteStore(path)
    try:
        assert await store.save_if_version("u", "s", AgentState("s", "u"), 0) == 1
        script = tmp_path / "worker.py"
        script.write_text(WORKER)
        procs = [
            subprocess.Popen(
                [sys.executable, str(script), path, f"w{w}", str(SAVES_PER_WORKER)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(WORKERS)
        ]
        acks: list[tuple[str, int]] = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            acks += [(token, version) for token, version in json.loads(out)]
        versions = [v for _, v in acks]
        assert len(versions) == len(set(versions)) == WORKERS * SAVES_PER_WORKER
        got = await store.get_versioned("u", "s")
        assert got.version == 1 + len(acks)
        assert got.state is not None
        history = [m.text for m in got.state.context]
        assert history == [token for token, _ in sorted(acks, key=lambda a: a[1])]
    finally:
        await store.aclose()


def test_a_writer_killed_mid_save_leaves_the_old_or_the_new_version(tmp_path) -> None:
    """The kernel's crash harness: SIGKILL a writer process mid-save, a dozen times."""
    from hookagent.testing.crash import kill_mid_save

    report = kill_mid_save("hookagent_example_store:ExampleSQLiteStore", str(tmp_path / "a.db"))
    assert report.kills == 12 and report.killed_in_save > 0
