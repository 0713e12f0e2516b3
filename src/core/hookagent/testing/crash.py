"""The crash harness for file-backed stores: SIGKILL a writer process mid-save, then check
that the slot loads at the old or the new version, never corrupt, and still takes saves.

A store's tests call ``kill_mid_save("mypkg.testing:open_store", str(tmp_path))``: the
factory, importable by dotted path ``module:callable``, is called with the given string
arguments (in the writer process and in this one) and returns a store, or an awaitable of
one. The writer (``python -m hookagent.testing.crash``) loops load, change, save: mostly
appends, every third save a whole rewrite (``History.replace``); before each save it
writes ``begin V`` to a progress file, after it ``done V``. Version V's history is always
``m1 .. m{V-1}``, so what a version holds is known exactly.
"""

from __future__ import annotations

import importlib
import inspect
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import attrs

from ..errors import VersionConflict
from ..messages import Msg
from ..state import AgentState
from ..store.base import AgentStateStore

USER, SESSION = "crash", "s"


@attrs.frozen
class CrashReport:
    kills: int
    killed_in_save: int
    """Kills that landed between a ``begin`` and its ``done``: mid-save."""
    final_version: int


async def _open(factory: str, args: tuple[str, ...]) -> AgentStateStore:
    module, _, name = factory.partition(":")
    if not module or not name:
        raise ValueError(f"factory must be 'module:callable', got {factory!r}")
    made = getattr(importlib.import_module(module), name)(*args)
    return await made if inspect.isawaitable(made) else made  # type: ignore[no-any-return]


def _message(i: int, pad: int) -> Msg:
    return Msg.user(f"m{i}" + "x" * pad, id=f"{i:032x}", timestamp=float(i))


async def _writer(factory: str, args: tuple[str, ...], progress: str, pad: int) -> None:
    store = await _open(factory, args)
    # written synchronously around each save, so that a kill finds exactly what was done
    with open(progress, "a", buffering=1) as out:  # noqa: ASYNC230
        out.write("ready\n")
        while True:
            got = await store.get_versioned(USER, SESSION)
            assert got.state is not None
            state, version = got.state, got.version
            new = [_message(i, pad) for i in range(version, version + 1)]
            if (version + 1) % 3 == 0:
                state.context.replace([*state.context, *new])  # a whole rewrite
            else:
                state.context.extend(new)
            out.write(f"begin {version + 1}\n")
            await store.save_if_version(USER, SESSION, state, version)
            out.write(f"done {version + 1}\n")


def _check(state: AgentState | None, version: int, pad: int) -> None:
    assert state is not None, f"version {version} loaded without a state"
    want = [f"m{i}" + "x" * pad for i in range(1, version)]
    got = [m.text for m in state.context]
    assert got == want, f"version {version} holds {len(got)} messages, not m1..m{version - 1}"


def kill_mid_save(
    factory: str,
    *args: str,
    kills: int = 12,
    pad: int = 20_000,
    seed: int = 9,
    timeout: float = 60.0,
) -> CrashReport:
    """Run ``kills`` rounds of start writer, SIGKILL it after a random delay, check the slot.

    Raises ``AssertionError`` naming the round when a load fails, gives another version
    than the last acknowledged one or the one in flight, or holds the wrong history, or
    when a save after the kill fails. ``pad`` characters per message make saves long
    enough to be hit mid-way. Call it from a sync test (it runs its own event loops).
    """
    rng = random.Random(seed)
    anyio.run(_create, factory, args)
    in_save, version = 0, 1
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(kills):
            progress = Path(tmp, f"progress-{round_}")
            progress.touch()
            cmd = [sys.executable, "-m", "hookagent.testing.crash", factory, str(progress)]
            proc = subprocess.Popen(
                [*cmd, str(pad), *args],
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                deadline = time.monotonic() + timeout
                while "ready" not in progress.read_text():
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(f"the writer did not start: {proc.communicate()[1]}")
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.02, 0.4))
            finally:
                os.kill(proc.pid, signal.SIGKILL)
                proc.communicate()
            marks = [line.split() for line in progress.read_text().splitlines()]
            marks = [m for m in marks if len(m) == 2]  # the last line may be cut short
            done = [int(v) for k, v in marks if k == "done"]
            acked = done[-1] if done else version
            flight = acked + 1 if marks and marks[-1][0] == "begin" else acked
            in_save += flight != acked
            version = anyio.run(_verify, factory, args, round_, acked, flight, pad)
    return CrashReport(kills, in_save, version)


async def _create(factory: str, args: tuple[str, ...]) -> None:
    store = await _open(factory, args)
    try:
        if (await store.get_versioned(USER, SESSION)).version == 0:
            await store.save_if_version(USER, SESSION, AgentState(SESSION, USER), 0)
    finally:
        await store.aclose()


async def _verify(
    factory: str, args: tuple[str, ...], round_: int, acked: int, flight: int, pad: int
) -> int:
    """After a kill: the slot loads at ``acked`` or ``flight`` with the right history, and
    takes the next save (no lock or temporary file left behind blocks it)."""
    store = await _open(factory, args)
    try:
        try:
            got = await store.get_versioned(USER, SESSION)
        except Exception as exc:
            raise AssertionError(f"round {round_}: the slot does not load: {exc!r}") from exc
        assert got.version in (acked, flight), (
            f"round {round_}: loaded version {got.version}, acknowledged {acked}"
        )
        _check(got.state, got.version, pad)
        assert got.state is not None
        got.state.context.append(_message(got.version, pad))
        try:
            return await store.save_if_version(USER, SESSION, got.state, got.version)
        except VersionConflict:
            if got.version != acked or flight == acked:
                raise
        # The killed writer's save in flight was still in the server's hands (its COMMIT
        # sent before the kill) and landed after this load: it must now be there, whole.
        got = await store.get_versioned(USER, SESSION)
        assert got.version == flight, (
            f"round {round_}: after a conflict, loaded version {got.version}, in flight {flight}"
        )
        _check(got.state, got.version, pad)
        assert got.state is not None
        got.state.context.append(_message(got.version, pad))
        return await store.save_if_version(USER, SESSION, got.state, got.version)
    finally:
        await store.aclose()


if __name__ == "__main__":  # the writer process
    _factory, _progress, _pad, *_args = sys.argv[1:]
    anyio.run(_writer, _factory, tuple(_args), _progress, int(_pad))
