"""``hookagent run`` and the ``sessions`` subcommands, as a user would chain them."""

from __future__ import annotations

import json
from pathlib import Path

from hookagent import AgentState

ANN = ["--user", "ann"]


def test_run_text_and_json(hk) -> None:
    first = hk("run", *ANN, "--session", "s1", "What's the weather in Oslo?")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("[demo model] get_weather says: Oslo:")
    assert "· calling get_weather(city='Oslo')" in first.stderr  # progress goes to stderr

    second = hk("run", *ANN, "--session", "s1", "--json", "what have we done so far?")
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert data["reply"].startswith("[demo model] This session already holds 4 messages")
    assert data["generate_reason"] == "COMPLETED"
    assert (data["user_id"], data["session_id"]) == ("ann", "s1")
    assert (data["version"], data["messages"]) == (2, 6)
    assert len(data["run_id"]) == 32
    assert second.stderr == ""

    piped = hk("run", *ANN, "--session", "s1", "--quiet", "-", stdin="count to 2")
    assert piped.returncode == 0 and "slow_count says: counted 1, 2" in piped.stdout
    assert piped.stderr == ""


def test_sessions_list_show_export_import_clear_delete(hk, tmp_path: Path) -> None:
    for sid in ("a", "b", "c"):
        assert hk("run", *ANN, "--session", sid, "-q", f"hello {sid}").returncode == 0
    assert hk("run", "--user", "bob", "--session", "z", "-q", "hi").returncode == 0

    page1 = hk("sessions", "list", *ANN, "--limit", "2")
    assert page1.returncode == 0, page1.stderr
    ids1 = page1.stdout.split()
    assert len(ids1) == 2
    cursor = page1.stderr.split("next cursor: ")[1].strip()
    page2 = hk("sessions", "list", *ANN, "--limit", "2", "--cursor", cursor)
    ids2 = page2.stdout.split()
    assert sorted(ids1 + ids2) == ["a", "b", "c"] and "next cursor" not in page2.stderr
    every = json.loads(
        hk("sessions", "list", *ANN, "--all", "--limit", "1", "--long", "--json").stdout
    )
    assert sorted(s["session_id"] for s in every["sessions"]) == ["a", "b", "c"]
    assert all(s["messages"] == 2 and s["version"] == 1 for s in every["sessions"])
    assert hk("sessions", "list", "--user", "bob").stdout.split() == ["z"]  # users are apart

    shown = hk("sessions", "show", *ANN, "--session", "a")
    assert shown.returncode == 0
    assert "session 'a' of user 'ann': version 1, 2 messages" in shown.stdout
    assert "   1 user       hello a" in shown.stdout

    dump = tmp_path / "a.json"
    exported = hk("sessions", "export", *ANN, "--session", "a", "--output", str(dump))
    assert exported.returncode == 0 and "version 1" in exported.stderr
    original = AgentState.from_json(dump.read_text())

    # import: refused over an existing session, allowed with --force or under new ids
    again = hk("sessions", "import", str(dump))
    assert again.returncode == 1
    assert again.stderr.strip().startswith("hookagent: error: SessionExists: session 'a' of user")
    copy = hk("sessions", "import", str(dump), "--user", "carl", "--session", "copy")
    assert copy.returncode == 0, copy.stderr
    copied = AgentState.from_json(
        hk("sessions", "export", "--user", "carl", "--session", "copy").stdout
    )
    assert (copied.user_id, copied.session_id) == ("carl", "copy")
    assert copied.context == original.context
    assert hk("sessions", "import", str(dump), "--force").returncode == 0

    # clear keeps the slot (and the other sections) but empties the history
    assert hk("sessions", "clear", *ANN, "--session", "a").returncode == 0
    cleared = hk("sessions", "show", *ANN, "--session", "a").stdout
    assert "2 messages" not in cleared and "conversation: (empty)" in cleared
    assert "section admin_log" in cleared

    # delete, then everything about it says it is gone
    assert hk("sessions", "delete", *ANN, "--session", "a").returncode == 0
    gone = hk("sessions", "show", *ANN, "--session", "a")
    assert gone.returncode == 1
    assert gone.stderr.strip() == (
        "hookagent: error: SessionNotFound: no session 'a' for user 'ann' in this store"
    )
    assert hk("sessions", "delete", *ANN, "--session", "a").returncode == 1
    assert hk("sessions", "clear", *ANN, "--session", "a").returncode == 1
    assert sorted(hk("sessions", "list", *ANN).stdout.split()) == ["b", "c"]

    # and a deleted session comes back from its export
    assert hk("sessions", "import", str(dump)).returncode == 0
    back = AgentState.from_json(hk("sessions", "export", *ANN, "--session", "a").stdout)
    assert back.context == original.context


def test_import_rejects_a_corrupt_file_and_writes_nothing(hk, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"session_id": "x", "context": [{"role": "wizard"}]}')
    proc = hk("sessions", "import", str(bad), *ANN)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "hookagent: error: " in proc.stderr
    assert hk("sessions", "list", *ANN).stdout == ""


def test_show_prints_summary_sections_and_tool_results(hk, tmp_path: Path) -> None:
    from hookagent import Msg, ToolResultBlock, ToolUseBlock

    state = AgentState(session_id="rich", user_id="ann", summary="Planning a trip to Lisbon.")
    state.put_section("plan_mode_context", {"plan_active": True, "current_plan_file": "plan.md"})
    state.tool_context.activated_groups.append("travel")
    state.put_section("memory", {"notes": ["likes trains"]})
    use = ToolUseBlock("call_1", "search", {"q": "flights to Lisbon"})
    state.context.extend(
        [
            Msg.user("find me a flight"),
            Msg.assistant([use]),
            Msg("tool", [ToolResultBlock("call_1", "search", (), "denied")]),
            Msg.assistant("I may not search."),
        ]
    )
    path = tmp_path / "rich.json"
    path.write_text(state.to_json())
    assert hk("sessions", "import", str(path)).returncode == 0
    shown = hk("sessions", "show", "--user", "ann", "--session", "rich")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "version 1, 4 messages, 1 tool calls, 1 results" in out
    assert "summary: Planning a trip to Lisbon." in out
    assert 'section plan_mode_context: {"plan_active": true, "current_plan_file": "plan.md"}' in out
    assert "tool groups: travel" in out
    assert 'section memory: {"notes": ["likes trains"]}' in out  # a plugin section, as JSON
    assert "→ search(q='flights to Lisbon')  [call_1]" in out
    assert "← search → denied:" in out
