"""Randomised differential test: every store of this plugin against the in-memory reference.

Seeded random sequences of loads, appends, edits, clears, stale and unconditional saves, other
keys and deletes; after every step both stores must agree on the outcome, the version and the
whole state (G20 in small).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hookagent.errors import VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store import InMemoryAgentStateStore
from hookagent.store.base import UNCONDITIONAL
from hookagent_store_jsonfile import FsspecJsonFileStore, LocalJsonFileStore

pytestmark = pytest.mark.anyio
USERS, SESSIONS, KEYS = ["a", "", "a/../b"], ["s1", "s 2"], ["agent_state", "obs"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def local(tmp: Path) -> Any:
    return LocalJsonFileStore(tmp / "root", cache_slots=2)


def local_compacting(tmp: Path) -> Any:
    """The local store compacting at every append (its thresholds are lowered below)."""
    return LocalJsonFileStore(tmp / "root", cache_slots=2)


def memory_single(tmp: Path) -> Any:
    return FsspecJsonFileStore(f"memory://diff-{uuid.uuid4().hex}", cache_slots=2)


def memory_multi(tmp: Path) -> Any:
    return FsspecJsonFileStore(f"memory://diff-{uuid.uuid4().hex}", writers="multi", cache_slots=2)


def local_fsspec_multi(tmp: Path) -> Any:
    return FsspecJsonFileStore(str(tmp / "fs"), writers="multi", fs=fsspec.filesystem("file"))


async def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", await call
    except VersionConflict as exc:
        return "conflict", exc.expected


def snapshot(state: AgentState | None) -> str | None:
    return None if state is None else state.to_json()


@pytest.mark.parametrize(
    "make", [local, local_compacting, memory_single, memory_multi, local_fsspec_multi]
)
@pytest.mark.parametrize("seed", [1, 2])
async def test_matches_the_in_memory_reference(
    make: Callable[[Path], Any], seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[int] = []
    if make is local_compacting:
        from hookagent_store_jsonfile import localcore
        from hookagent_store_jsonfile.localwrite import LocalWrites

        monkeypatch.setattr(localcore, "COMPACT_MIN", 0)
        monkeypatch.setattr(localcore, "COMPACT_RATIO", 1 << 40)  # every append compacts
        real = LocalWrites._compact

        def counted(self: LocalWrites, *args: Any) -> str:
            compactions.append(1)
            return real(self, *args)

        monkeypatch.setattr(LocalWrites, "_compact", counted)
    rng = random.Random(seed)
    ref, store = InMemoryAgentStateStore(), make(tmp_path)
    loaded: dict[tuple[str, str, str], tuple[AgentState, AgentState, int]] = {}
    counter = 0
    for step in range(250):
        u, s, k = rng.choice(USERS), rng.choice(SESSIONS), rng.choice(KEYS)
        op = rng.choice(["load", "load", "save", "save", "save", "unconditional", "delete", "list"])
        if op == "load" or (op == "save" and (u, s, k) not in loaded):
            a, b = await ref.get_versioned(u, s, k), await store.get_versioned(u, s, k)
            assert (a.version, snapshot(a.state)) == (b.version, snapshot(b.state))
            sa = a.state or AgentState(s, u)
            sb = b.state or AgentState(s, u)
            loaded[(u, s, k)] = (sa, sb, a.version)
        elif op in ("save", "unconditional"):
            sa, sb, version = loaded.get((u, s, k), (AgentState(s, u), AgentState(s, u), 0))
            change = rng.choice(["append", "append", "edit", "clear", "summary"])
            new = [Msg.user(f"m{counter}-{i}") for i in range(rng.randint(1, 3))]
            edit_at = rng.randrange(len(sa.context)) if len(sa.context) else None
            for st in (sa, sb):  # the same message objects go to both stores
                if change == "append":
                    st.context.extend(new)
                elif change == "edit" and edit_at is not None:
                    st.context[edit_at] = new[0]
                elif change == "clear":
                    st.clear_context()
                    st.context.append(new[0])
                else:
                    st.summary = f"sum{counter}"
            counter += 1
            expected = UNCONDITIONAL if op == "unconditional" else version
            ra = await outcome(ref.save_if_version(u, s, sa, expected, key=k))
            rb = await outcome(store.save_if_version(u, s, sb, expected, key=k))
            assert ra == rb, (op, change, ra, rb)
            if ra[0] == "ok":
                loaded[(u, s, k)] = (sa, sb, ra[1])
            else:
                loaded.pop((u, s, k), None)
        elif op == "delete":
            key = rng.choice([None, k])
            assert await ref.delete(u, s, key) == await store.delete(u, s, key)
            loaded = {slot: v for slot, v in loaded.items() if slot[:2] != (u, s)}
        else:
            assert await ref.list_session_ids(u) == await store.list_session_ids(u)
        if step % 10:
            continue
        for uu in USERS:
            for ss in SESSIONS:
                for kk in KEYS:
                    assert await ref.exists(uu, ss, kk) == await store.exists(uu, ss, kk)
    await store.aclose()
    assert (make is not local_compacting) or len(compactions) > 10, len(compactions)
