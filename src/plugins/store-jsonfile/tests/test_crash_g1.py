"""G1: a writer SIGKILLed mid-save, 300 times: 0 unreadable states, 0 acknowledged versions lost.

The negative control runs the same harness on a naive writer (open('w') + json.dump) and must
find corruption, which proves the harness can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).parent / "helpers" / "crashloop.py"


def run_harness(
    mode: str, root: Path, kills: int, seed: int, min_acks: int = 0
) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, str(HARNESS), mode, str(root), str(kills), str(seed), str(min_acks)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_sigkill_mid_save_loses_nothing(tmp_path: Path) -> None:
    summary = run_harness("store", tmp_path / "root", 300, seed=20261130, min_acks=50)
    print(summary)
    assert summary["kills"] >= 300
    assert summary["unreadable"] == 0, summary["errors"]
    assert summary["regressions"] == 0, summary["errors"]
    assert summary["acks"] >= 50  # the writer made progress between kills
    assert summary["final_version"] >= summary["acks"]  # acked versions are distinct
    assert summary["tmp_after_sweep"] == 0


def test_negative_control_naive_writer_corrupts(tmp_path: Path) -> None:
    summary = run_harness("naive", tmp_path / "naive", 40, seed=7)
    print(summary)
    assert summary["kills"] == 40
    assert summary["unreadable"] > 0, "the harness failed to catch a naive writer"


def test_the_kernel_crash_harness(tmp_path: Path) -> None:
    """The conformance suite's exported harness (``hookagent.testing.crash``) on this store:
    after each SIGKILL the slot loads at the acknowledged version or the one in flight, with
    exactly that version's history, and takes the next save."""
    from hookagent.testing.crash import kill_mid_save

    report = kill_mid_save("hookagent_store_jsonfile:LocalJsonFileStore", str(tmp_path / "root"))
    assert report.kills == 12 and report.killed_in_save > 0
    assert report.final_version > 12
