"""``hookagent harness-demo`` end to end: every step's output, then what it left, read back."""

from __future__ import annotations

import re
import time
from pathlib import Path

from hookagent import AgentState


def test_the_harness_demo_tells_every_step(hk, homes: tuple[Path, Path]) -> None:
    started = time.monotonic()
    proc = hk("harness-demo", "--session", "story", "--interrupt-after", "0.5")
    elapsed = time.monotonic() - started
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr + out
    flat = " ".join(out.split())  # long replies are wrapped
    steps = out.split("\n\n")
    assert [s.splitlines()[0][:3] for s in steps[1:8]] == [f"{i}. " for i in range(1, 8)]
    one, two, three, four, five, six, seven = steps[1:8]
    # the header: the preset's defaults, one line each
    for name in ("workspace", "tasks", "permissions", "plan-mode", "memory", "compaction"):
        assert f"    {name:<12} " in steps[0]
    # 1. the todo list, written here and seen by the model of another process
    assert "· todo_write → success: Todo list updated (revision 1)" in one
    assert "waits" not in one  # the preset allows todo_write without asking
    assert "$ hookagent run --preset harness --session story 'What is on my todo list?'" in one
    assert (
        "My request shows this todo list: - [~] read the notes - [ ] write the summary "
        "- [ ] check the result" in " ".join(one.split())
    )
    # 2. a permission question, answered
    assert "· write_file waits (confirm)" in two
    assert "(the turn is suspended and saved) question: Allow write_file(" in two
    assert "· write_file → success" in two
    assert "✓ notes/hello.md now holds: 'hello from the harness demo'" in two
    # 3. plan mode blocks the write (without asking), then the write runs after plan_exit
    blocked, released = three.split("you>   Exit plan mode")
    assert "· plan_enter → success" in blocked and "plan_enter waits" not in blocked
    assert "· write_file → denied: Plan mode blocked the tool 'write_file'" in blocked
    assert "write_file waits" not in blocked
    assert "· plan_write → success: Plan saved to PLAN.md" in blocked
    assert "? permissions ask before plan_exit: approved" in released
    assert "· write_file → success" in released
    assert "after plan_exit it ran: 'version 2, as planned'" in released
    # 4. MEMORY.md reaches the model of a session with no history
    assert "· memory_write → success: noted in MEMORY.md" in four
    assert "MEMORY.md is in my system prompt; it says: the demo user likes short answers" in four
    # 5. compaction, and the summary
    done = re.search(
        r"✓ compacted before the request: (\d+) messages → (\d+) \((\d+) summarised", five
    )
    assert done is not None, five
    before, after, summarised = map(int, done.groups())
    assert before >= 50 and after == 21 and summarised == before - 20
    assert "tokens; the last 20 kept verbatim)" in five
    assert "| [demo summary] A deterministic digest" in five
    assert "| Tools used: write_file x3" in five and "todo_write x1" in five
    # 6. an interrupt mid-tool
    assert "· calling slow_count(n=20)" in six
    assert "agent.interrupt(user, session, 'stop, please')" in six
    assert "· slow_count → interrupted" in six and "[interrupted]" in six
    # 7. the session log read by another process, and a resume from it
    log = f"file://{homes[0] / 'session-log'}"
    assert f"$ hookagent log tail -n 3 --type tool/ --type run/finished --log {log}" in seven
    [dispatch] = [line for line in seven.splitlines() if "tool/dispatch" in line]
    assert "slow_count" in dispatch
    assert [line.split()[-1] for line in seven.splitlines() if "run/finished" in line][-1] == (
        "interrupted"
    )
    assert "loaded the session from the session log" in seven
    assert "“Count to 20, slowly.” → interrupted (slow_count interrupted)" in " ".join(
        seven.split()
    )
    # where everything is stored
    workspace_home = homes[1]
    assert f"state (history, summary, todos, permissions, plan mode): session log {log}" in flat
    assert f"workspace files: file://{workspace_home / 'hookagent' / 'users' / 'demo'}" in flat
    assert "MEMORY.md, PLAN.md, notes/" in out
    assert "hookagent tasks show --preset harness --user demo --session story" in out
    assert f"hookagent log show --log {log} --user demo --session story" in out
    assert elapsed < 90, f"the demo took {elapsed:.1f}s"

    files = workspace_home / "hookagent" / "users" / "demo"
    assert (files / "notes" / "hello.md").read_text() == "version 2, as planned\n"
    assert "the demo user likes short answers" in (files / "MEMORY.md").read_text()
    assert "rewrite notes/hello.md" in (files / "PLAN.md").read_text()

    # the state, as another process rebuilds it from the session log
    exported = hk(
        "sessions", "export", "--preset", "harness", "--user", "demo", "--session", "story"
    )
    assert exported.returncode == 0, exported.stderr
    state = AgentState.from_json(exported.stdout)
    assert state.summary is not None and state.summary.startswith("[demo summary]")
    assert state.context[0].text.startswith("[Summary of the earlier conversation")
    assert "read the notes" in str(state.extensions["tasks_context"])
    assert state.extensions["plan_mode_context"]["plan_active"] is False
    assert state.extensions["permission_context"]["mode"] == "default"
    uses = [u.id for m in state.context for u in m.tool_uses]
    results = {r.id for m in state.context for r in m.tool_results}
    assert set(uses) <= results  # every kept tool call has its result, the interrupted one too

    # the tasks command of another process reads the same list
    shown = hk("tasks", "show", "--preset", "harness", "--user", "demo", "--session", "story")
    assert shown.returncode == 0, shown.stderr
    assert "read the notes" in shown.stdout


def test_the_demo_refuses_another_preset(hk) -> None:
    proc = hk("harness-demo", "--preset", "other")
    assert proc.returncode == 1
    assert "the harness demo runs the 'harness' preset, not 'other'" in proc.stderr


def test_the_demo_on_redis_keeps_the_session_log_there(hk, cli_env, homes) -> None:
    """``--store redis://...``: the preset puts the session log on the same URL."""
    import secrets

    import redis

    prefix = f"hdemo{secrets.token_hex(4)}"
    url = f"redis://127.0.0.1:6379/14?prefix={prefix}"
    env = {
        **cli_env,
        "HOOKAGENT_BLOCKED_PLUGINS": "model-openai,store-sql,example-tools,example-store",
    }
    client = redis.Redis(db=14)
    try:
        proc = hk(
            "harness-demo", "--store", url, "--session", "r1", "--interrupt-after", "0.5", env=env
        )
        assert proc.returncode == 0, proc.stderr + proc.stdout
        out = proc.stdout
        assert f"state      session log {url}" in out
        assert "loaded the session from the session log" in out
        assert "· slow_count → interrupted" in out
        assert any(client.scan_iter(match=f"{prefix}:*"))  # the log is on Redis
        assert not (homes[0] / "session-log").exists()  # nothing went to the default log
        shown = hk("log", "show", "--log", url, "--user", "demo", "--session", "r1", env=env)
        assert shown.returncode == 0, shown.stderr
        assert "run/finished" in shown.stdout and "interrupted" in shown.stdout
    finally:
        for key in client.scan_iter(match=f"{prefix}:*"):
            client.delete(key)
        client.close()
