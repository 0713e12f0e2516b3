"""``hookagent demo`` end to end, then the state it left, read back independently."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from hookagent import AgentState


def test_demo_tells_the_interrupted_then_resumed_story(hk, state_home: Path) -> None:
    proc = hk("demo", "--session", "demo-test", "--interrupt-after", "0.5")
    out = proc.stdout
    flat = " ".join(out.split())  # long replies are wrapped
    assert proc.returncode == 0, proc.stderr + out
    # 1. a tool call and its answer
    assert "calling get_weather(city='Paris')" in out
    assert "get_weather → success: Paris:" in out
    # 2. interrupted mid-tool, consistent state saved
    assert "calling slow_count(n=20)" in out
    assert "agent.interrupt(user, session, 'stop, please')" in out
    assert "[interrupted]" in out
    assert "slow_count → interrupted" in out
    assert "✓ consistent: 2 tool calls, 2 results (1 marked 'interrupted')" in out
    # 3. a new process resumed the same session
    assert "A new process resumes the same session" in out
    assert "This session already holds 9 messages" in flat
    assert "“Count to 20, slowly.” → interrupted (slow_count interrupted)" in flat
    assert "now 11 messages, version 3" in out
    # 4. where it lives and how to look at it
    assert f"The state lives in: {state_home / 'hookagent'}" in out
    assert "hookagent sessions show --user demo --session demo-test" in out
    assert len(out.splitlines()) < 60

    async def load() -> AgentState:
        from hookagent_store_jsonfile.local import LocalJsonFileStore

        store = LocalJsonFileStore(state_home / "hookagent")
        try:
            got = await store.get_versioned("demo", "demo-test")
        finally:
            await store.aclose()
        assert got.version == 3 and got.state is not None
        return got.state

    state = anyio.run(load)
    uses = [u for m in state.context for u in m.tool_uses]
    results = {r.id: r for m in state.context for r in m.tool_results}
    assert len(uses) == 2 and all(u.id in results for u in uses)
    assert [results[u.id].state for u in uses] == ["success", "interrupted"]
    assert [m.role for m in state.context][-2:] == ["user", "assistant"]
    assert state.context[-2].text == "What have we done so far?"

    # the same state through the CLI, as the demo suggests
    shown = hk("sessions", "show", "--user", "demo", "--session", "demo-test")
    assert shown.returncode == 0, shown.stderr
    assert "version 3, 11 messages, 2 tool calls, 2 results" in shown.stdout
    exported = hk("sessions", "export", "--user", "demo", "--session", "demo-test")
    assert AgentState.from_json(exported.stdout).context == state.context
    assert json.loads(exported.stdout)["session_id"] == "demo-test"


def test_demo_without_a_persistent_default_store_says_so(hk, cli_env) -> None:
    env = {
        **cli_env,
        "HOOKAGENT_BLOCKED_PLUGINS": cli_env["HOOKAGENT_BLOCKED_PLUGINS"] + ",store-jsonfile",
    }
    proc = hk("demo", env=env)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.startswith("hookagent: error:")]
    assert lines == [
        "hookagent: error: StoreConfigurationError: no store plugin provides a persistent "
        "default store (is hookagent-store-jsonfile installed?); pass --store URL, e.g. "
        "--store file:///tmp/hookagent-state"
    ]


def test_demo_on_a_store_given_by_url(hk, cli_env, tmp_path: Path) -> None:
    env = {**cli_env, "HOOKAGENT_BLOCKED_PLUGINS": "model-openai,store-redis,example-tools"}
    url = f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}"
    proc = hk("demo", "--store", url, "--session", "d1", "--interrupt-after", "0.3", env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert f"The state lives in: {url}" in proc.stdout
    assert "now 11 messages, version 3" in proc.stdout
    assert not (tmp_path / "state").exists()  # nothing went to the default store
    listed = hk("sessions", "list", "--user", "demo", "--store", url, "--long", env=env)
    assert listed.stdout.split() == ["d1", "version", "3", "11", "messages"]
