"""Run the peers' ``driver.py`` with hookagent registered (``driver.PEERS``), unedited.

Also routes the harness's fresh-process W3 through this wrapper, so the child knows the peer.
Used by ``run_peers.sh`` from a copy of the harness; takes the same arguments as ``driver.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import driver  # noqa: E402

driver.PEERS["hookagent"] = "peer_hookagent"


def run_w3_subprocess(peer: str, store: str, n: int) -> dict:
    cmd = [sys.executable, str(HERE / "run_peers.py"), "w3", "--peer", peer, "--store", store]
    p = subprocess.run([*cmd, "--n", str(n)], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return {"error": p.stderr[-2000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


driver.run_w3_subprocess = run_w3_subprocess

if __name__ == "__main__":
    driver.main()
