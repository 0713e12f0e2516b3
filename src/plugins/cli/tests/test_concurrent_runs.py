"""Two ``hookagent run`` processes on one session at once: both complete, in order, no input
lost -- on Redis through its distributed gate, on the file store through the CLI's lock."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import anyio
import pytest
from hookagent import AgentState

from .conftest import HOOKAGENT


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*HOOKAGENT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 60) -> list[str]:
    """Read ``proc``'s stderr until a line holds ``needle``; the lines read so far."""
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} not seen on stderr: {seen}")


def race(common: list[str], env: dict[str, str]) -> tuple[str, str, str]:
    """A holds the session (a slow tool), B starts meanwhile; both must finish. The count
    (12 x 0.4 s) must outlast B's start (about 1 s of imports and plugin discovery on a quiet
    machine; 2.4 s was too short at load 15, and at load 20 a start took 19 s: no count is
    long enough on a saturated machine)."""
    first = start(["run", *common, "count to 12 slowly"], env)
    try:
        wait_for_line(first, "· calling slow_count(n=12)")  # A holds the session now
        second = start(["run", *common, "what have we done so far?"], env)
        try:
            b_out, b_err = second.communicate(timeout=120)
        finally:
            if second.poll() is None:
                second.kill()
        a_out, a_err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, a_err
    assert second.returncode == 0, b_err
    assert "VersionConflict" not in a_err + b_err
    return a_out, b_out, b_err


def check_history(state: AgentState) -> None:
    users = [m.text for m in state.context if m.role == "user"]
    assert users == ["count to 12 slowly", "what have we done so far?"]
    last = state.context[-1]
    assert last.role == "assistant" and "This session already holds" in last.text
    # A's whole turn (call, result, reply) comes before B's input
    b_input = [i for i, m in enumerate(state.context) if m.text == "what have we done so far?"]
    results = [r for m in state.context[: b_input[0]] for r in m.tool_results]
    assert [(r.name, r.state) for r in results] == [("slow_count", "success")]


def test_two_runs_on_the_file_store_wait_for_each_other(hk, cli_env) -> None:
    common = ["--user", "race", "--session", "f1"]
    a_out, b_out, b_err = race(common, cli_env)
    assert "counted " + ", ".join(map(str, range(1, 13))) in a_out
    assert "This session already holds 4 messages" in b_out  # B ran after A's whole turn
    assert "· waiting for session 'f1' of user 'race': held by another process (pid " in b_err
    exported = hk("sessions", "export", *common)
    state = AgentState.from_json(exported.stdout)
    check_history(state)
    assert len(state.context) == 6


REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_url() -> Iterator[str]:
    from hookagent_store_redis.testing import delete_prefix, new_prefix

    prefix = new_prefix()
    yield f"{REDIS}?prefix={prefix}"

    async def cleanup() -> None:
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(REDIS)
        try:
            await delete_prefix(client, prefix)
        finally:
            await client.aclose()

    anyio.run(cleanup)


def test_two_runs_on_redis_take_its_distributed_gate(hk, cli_env, redis_url) -> None:
    env = {**cli_env, "HOOKAGENT_BLOCKED_PLUGINS": "model-openai,store-sql,example-tools"}
    common = ["--user", "race", "--session", "r1", "--store", redis_url]
    a_out, b_out, b_err = race(common, env)
    assert "counted " + ", ".join(map(str, range(1, 13))) in a_out
    assert "This session already holds 4 messages" in b_out
    assert "· waiting for session 'r1' of user 'race': held by another process (the " in b_err
    exported = hk("sessions", "export", *common, env=env)
    assert exported.returncode == 0, exported.stderr
    state = AgentState.from_json(exported.stdout)
    check_history(state)
    assert len(state.context) == 6


def test_a_store_offers_its_gate_with_session_gate() -> None:
    from hookagent import LocalSessionGate
    from hookagent.errors import StoreConfigurationError
    from hookagent.store.memory import InMemoryAgentStateStore
    from hookagent_cli.gates import store_gate

    offered = LocalSessionGate()

    class Offering(InMemoryAgentStateStore):
        def session_gate(self) -> LocalSessionGate:
            return offered

    class Broken(InMemoryAgentStateStore):
        def session_gate(self) -> object:
            return "not a gate"

    assert store_gate(Offering()) is offered
    assert store_gate(InMemoryAgentStateStore()) is None
    with pytest.raises(StoreConfigurationError, match=r"session_gate\(\) returned 'not a gate'"):
        store_gate(Broken())


def test_the_lock_gate_times_out_with_session_busy(tmp_path) -> None:
    from hookagent.errors import SessionBusy
    from hookagent_cli.gates import FileLockGate

    gate = FileLockGate(tmp_path, "root:/x", "hookagent")
    told: list[str] = []

    async def main() -> None:
        async with gate.acquire("u", "s"):
            with pytest.raises(SessionBusy, match=r"stayed busy for 0\.2s"):
                async with gate.acquire("u", "s", timeout=0.2, notify=told.append):
                    pass
            async with gate.acquire("u", "other", notify=told.append):  # other slots run
                pass
        async with gate.acquire("u", "s", timeout=0.2, notify=told.append):  # free again
            pass

    anyio.run(main)
    assert len(told) == 1 and told[0].startswith("waiting for session 's' of user 'u'")
    assert gate.path("u", "s") != gate.path("u", "s2") != gate.path("u/s", "")
