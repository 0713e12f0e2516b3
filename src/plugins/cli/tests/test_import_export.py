"""``sessions import``/``export``: the slot named is the slot written; AgentScope files."""

from __future__ import annotations

import json
from pathlib import Path

from hookagent import AgentState

DATA = Path(__file__).parent / "data"


def test_import_writes_only_the_slot_it_names(hk, tmp_path: Path) -> None:
    assert hk("run", "--user", "alice", "--session", "x", "-q", "hello").returncode == 0
    dump = tmp_path / "alice-x.json"
    assert (
        hk("sessions", "export", "--user", "alice", "--session", "x", "-o", str(dump)).returncode
        == 0
    )

    # a file whose state names another user than the one exported (issue 13's case)
    doc = json.loads(dump.read_text())
    doc["user_id"] = "bob"
    bobs = tmp_path / "says-bob.json"
    bobs.write_text(json.dumps(doc))
    into = hk("sessions", "import", str(bobs), "--user", "carol")
    assert into.returncode == 0, into.stderr
    assert into.stdout.strip() == (
        "imported the session into session 'x' of user 'carol': version 1 "
        "(re-addressed: the file is session 'x' of user 'bob')"
    )
    carol = AgentState.from_json(
        hk("sessions", "export", "--user", "carol", "--session", "x").stdout
    )
    assert (carol.user_id, carol.session_id) == ("carol", "x")
    assert carol.context == AgentState.from_json(dump.read_text()).context
    assert hk("sessions", "list", "--user", "bob").stdout == ""  # nothing went to bob

    # without --force an existing slot is never overwritten, whatever the file says
    again = hk("sessions", "import", str(bobs), "--user", "alice")
    assert again.returncode == 1
    assert again.stderr.startswith("hookagent: error: SessionExists: session 'x' of user 'alice'")
    unchanged = hk("sessions", "show", "--user", "alice", "--session", "x").stdout
    assert "version 1, 2 messages" in unchanged
    # the file's own slot (bob's) by default
    plain = hk("sessions", "import", str(bobs))
    assert plain.returncode == 0 and "into session 'x' of user 'bob': version 1\n" in plain.stdout
    # --force replaces the named slot, and only it
    forced = hk("sessions", "import", str(bobs), "--user", "alice", "--session", "x", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "version 2" in forced.stdout
    assert sorted(hk("sessions", "list", "--user", "carol").stdout.split()) == ["x"]


def test_import_an_agentscope_file_show_it_and_export_it_back(hk, tmp_path: Path) -> None:
    source = DATA / "agentscope_python.json"
    done = hk("sessions", "import", "--from", "agentscope", str(source))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "imported an AgentScope state into session 'trip-2026-06-02' of user 'alice': version 1"
    )
    shown = hk("sessions", "show", "--user", "alice", "--session", "trip-2026-06-02")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "version 1, 6 messages, 2 tool calls, 2 results" in out
    assert (
        'section permission_context: {"mode": "accept_edits", ' in out
    )  # plugin sections, as JSON
    assert (
        'section plan_mode_context: {"plan_active": true, "current_plan_file": "plans/porto.md"}'
        in out
    )
    assert "← search_trains → success: IC 521" in out

    exported = tmp_path / "back.json"
    proc = hk(
        "sessions",
        "export",
        "--user",
        "alice",
        "--session",
        "trip-2026-06-02",
        "--to",
        "agentscope",
        "-o",
        str(exported),
    )
    assert proc.returncode == 0, proc.stderr
    back = json.loads(exported.read_text())
    original = json.loads(source.read_text())
    assert back["context"][2] == original["context"][2]  # TOOL role, finished state, as it was
    assert back["permission_context"] == original["permission_context"]
    assert back["tasks_context"] == original["tasks_context"]
    assert "read_file_cache" not in back
    # and an AgentScope export comes back in (auto-detected) under another name
    copy = hk("sessions", "import", str(exported), "--session", "copy")
    assert copy.returncode == 0 and "an AgentScope state" in copy.stdout


def test_a_foreign_file_is_one_line_naming_the_accepted_formats(hk, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"conversation": [{"from": "human", "value": "hi"}]}))
    proc = hk("sessions", "import", str(path))
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(
        f"hookagent: error: ForeignStateFormat: {path} is in neither format; accepted: a hookagent "
        "export (JSON with schema_version, from 'hookagent sessions export') or an AgentScope "
        "AgentState (Java 2.0 / Python 2.x JSON, --from agentscope)"
    )


def test_validation_errors_use_our_words(hk, tmp_path: Path) -> None:
    ours = tmp_path / "ours.json"
    ours.write_text(
        json.dumps({"schema_version": 1, "session_id": "s", "context": [{"role": "USER"}]})
    )
    proc = hk("sessions", "import", str(ours))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.strip() == (
        "hookagent: error: InvalidState: $.context[0].role: 'USER' is not one of user, "
        "assistant, system, tool"
    )
    theirs = tmp_path / "theirs.json"
    doc = json.loads((DATA / "agentscope_java.json").read_text())
    doc["context"][3]["role"] = "ROBOT"
    theirs.write_text(json.dumps(doc))
    proc = hk("sessions", "import", str(theirs))
    assert proc.stderr.strip() == (
        "hookagent: error: AgentScopeFormatError: AgentScope state: $.context[3].role: 'ROBOT' "
        "is not a role; expected USER, ASSISTANT, SYSTEM or TOOL"
    )
    for bad in (proc.stderr,):
        assert "unknown error" not in bad and "typing." not in bad
    assert hk("sessions", "list", "--user", "").stdout == ""  # nothing was written
