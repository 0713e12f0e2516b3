"""The crash harness catches a store that can be cut mid-save, and passes one that cannot."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from hookagent.testing.crash import kill_mid_save

TOY = textwrap.dedent(
    '''
    import os
    import time
    from hookagent import AgentState, Versioned, VersionConflict, codec

    class FileStore:
        """One JSON file per store: {"version": n, "state": {...}}; atomic or not."""

        def __init__(self, path, atomic="yes"):
            self.path, self.atomic = path, atomic == "yes"

        async def get_versioned(self, user_id, session_id, key="agent_state"):
            if not os.path.exists(self.path):
                return Versioned(None, 0)
            with open(self.path, "rb") as f:
                doc = codec.loads(f.read())
            return Versioned(codec.state_from_dict(doc["state"]), doc["version"])

        async def save_if_version(self, user_id, session_id, state, expected, **kw):
            current = (await self.get_versioned(user_id, session_id)).version
            if expected != current:
                raise VersionConflict(user_id, session_id, "agent_state", expected, current)
            data = codec.dumps({"version": current + 1, "state": codec.state_to_dict(state)})
            target = self.path + ".tmp" if self.atomic else self.path
            with open(target, "wb") as f:
                for at in range(0, len(data), 4096):  # a slow write, to be cut mid-way
                    f.write(data[at : at + 4096])
                    f.flush()
                    time.sleep(0.002)  # most time is mid-write: kills land there, even on a busy machine
            if self.atomic:
                os.replace(target, self.path)
            state.context.mark_committed()
            return current + 1

        async def aclose(self):
            pass
    '''
)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "toy_crash_store.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_crash_store", raising=False)
    return tmp_path


def test_a_store_written_in_place_is_caught(toy: Path) -> None:
    with pytest.raises(AssertionError, match="does not load"):
        kill_mid_save("toy_crash_store:FileStore", str(toy / "s.json"), "no", kills=20)


def test_an_atomic_store_passes(toy: Path) -> None:
    report = kill_mid_save("toy_crash_store:FileStore", str(toy / "s.json"), "yes", kills=8)
    # at least one kill landed mid-save (how many depends on the machine's load)
    assert report.kills == 8 and report.killed_in_save >= 1 and report.final_version > 8
