"""The AgentScope converter on its own (pure functions), on realistic Java 2.0 and Python 2.x
AgentState files written from the reference's field tables."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from hookagent import AgentState
from hookagent.errors import InvalidState
from hookagent_cli.agentscope import from_agentscope, to_agentscope
from hookagent_cli.errors import AgentScopeFormatError, ForeignStateFormat
from hookagent_cli.statefile import detect, read_state, write_state

DATA = Path(__file__).parent / "data"


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def normalised(doc: dict[str, Any], *, cache: str) -> dict[str, Any]:
    """What a faithful round trip gives back: no read cache, no raw_input, content as blocks."""
    doc = copy.deepcopy(doc)
    del doc[cache]
    for msg in doc["context"]:
        if isinstance(msg["content"], str):
            msg["content"] = [{"type": "text", "text": msg["content"]}]
        for block in msg["content"]:
            block.pop("raw_input", None)
    return doc


def test_a_python_agentstate_becomes_ours() -> None:
    state, kind = read_state((DATA / "agentscope_python.json").read_text(), "f.json")
    assert kind == "agentscope"
    assert (state.user_id, state.session_id) == ("alice", "trip-2026-06-02")
    assert [m.role for m in state.context] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first = state.context[0]
    assert first.text.startswith("Book me a train") and first.name == "alice"
    when = dt.datetime(2026, 6, 2, 10, 15, 30, 123000, tzinfo=dt.UTC).timestamp()
    assert first.timestamp == pytest.approx(when, abs=1e-6)
    assert first.id == "Vx3kqP9LmN2bR7tYcW4hZa"
    thinking, text, use = state.context[1].content
    assert thinking.thinking.startswith("Search first") and text.text == "Let me look for trains."
    assert (use.id, use.name, use.input["to"]) == ("call_1", "search_trains", "Porto")
    results = [r for m in state.context for r in m.tool_results]
    assert [(r.id, r.state) for r in results] == [("call_1", "success"), ("call_2", "error")]
    assert results[0].text.startswith("IC 521")
    assert state.context[1].metadata["usage"]["input_tokens"] == 812

    # the harness plugins' sections: kept as the reference spells them (snake_case)
    perm = state.extensions["permission_context"]
    assert perm["mode"] == "accept_edits"
    assert perm["ask_rules"]["write_file"][1]["behavior"] == "passthrough"
    assert perm["deny_rules"]["shell"][0] == {
        "tool_name": "shell",
        "rule_content": "rm -rf *",
        "behavior": "deny",
        "source": "policy",
    }
    assert perm["working_directories"]["workspace"]["path"] == "/home/alice/trips"
    assert state.extensions["plan_mode_context"] == {
        "plan_active": True,
        "current_plan_file": "plans/porto.md",
    }
    tasks = state.extensions["tasks_context"]
    assert [(t["subject"], t["state"], t["id"]) for t in tasks["tasks"]] == [
        ("Find a train Lisbon -> Porto", "completed", "5f0c6b8e2a9d4e1f8b7a6c5d4e3f2a1b"),
        ("Write the plan", "in_progress", "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"),
    ]
    assert tasks["tasks"][1]["owner"] == "Friday" and tasks["revision"] == 3
    assert state.tool_context.activated_groups == ["travel", "files"]
    assert "read_file_cache" not in json.dumps(state.extensions)  # read caches are dropped
    assert sorted(state.extensions) == [  # nothing else to keep aside: no "agentscope"
        "permission_context",
        "plan_mode_context",
        "tasks_context",
    ]


@pytest.mark.parametrize(
    ("name", "fmt", "cache"),
    [
        ("agentscope_python.json", "agentscope", "read_file_cache"),
        ("agentscope_java.json", "agentscope-java", "readFileState"),
    ],
)
def test_import_then_export_gives_the_file_back(name: str, fmt: str, cache: str) -> None:
    original = load(name)
    state, _ = read_state(json.dumps(original), name)
    # through our own JSON too, as a store would keep it
    again = AgentState.from_json(state.to_json())
    back = json.loads(write_state(again, fmt))
    assert back == normalised(original, cache=cache)


def test_the_java_file_reads_like_the_python_one() -> None:
    py, _ = read_state((DATA / "agentscope_python.json").read_text(), "p")
    java, _ = read_state((DATA / "agentscope_java.json").read_text(), "j")
    assert java.user_id == ""  # null: the anonymous partition
    assert java.extensions["permission_context"]["mode"] == "accept_edits"  # ACCEPT_EDITS
    assert java.context == py.context
    for name in ("permission_context", "tasks_context", "plan_mode_context"):
        assert java.extensions[name] == py.extensions[name], name


def test_a_plugin_change_to_a_section_is_what_export_writes() -> None:
    state, _ = read_state((DATA / "agentscope_python.json").read_text(), "f")
    perm = state.extensions["permission_context"]  # as hookagent-permissions changes it
    perm["ask_rules"]["shell"] = [
        {"tool_name": "shell", "rule_content": "git *", "behavior": "ask", "source": "session"}
    ]
    perm["mode"] = "explore"
    state.extensions["tasks_context"]["revision"] = 4
    out = to_agentscope(json.loads(state.to_json()))
    assert out["permission_context"]["mode"] == "explore"
    assert out["permission_context"]["ask_rules"]["shell"][0]["rule_content"] == "git *"
    assert out["permission_context"]["ask_rules"]["write_file"][0]["source"] == "user_settings"
    assert out["tasks_context"]["revision"] == 4
    assert out["tasks_context"]["tasks"][1]["blocked_by"] == ["5f0c6b8e2a9d4e1f8b7a6c5d4e3f2a1b"]


def test_a_slot_in_the_kernels_old_section_shapes_exports_in_the_references() -> None:
    """Slots saved before the plugins owned these sections hold the kernel's old shapes."""
    state = AgentState(session_id="s", user_id="u")
    state.extensions["permission_context"] = {
        "mode": "explore",
        "rules": [{"tool": "shell", "decision": "deny", "pattern": "rm *"}],
    }
    state.extensions["plan_mode_context"] = {"active": True, "plan_file": "PLAN.md"}
    state.extensions["tasks_context"] = {
        "todos": [{"content": "one", "status": "in_progress", "id": "a" * 32}],
        "revision": 2,
        "objective": None,
    }
    out = json.loads(write_state(state, "agentscope"))
    assert out["permission_context"]["mode"] == "explore"
    assert out["permission_context"]["deny_rules"] == {
        "shell": [
            {"tool_name": "shell", "rule_content": "rm *", "behavior": "deny", "source": None}
        ]
    }
    assert out["plan_mode_context"] == {"plan_active": True, "current_plan_file": "PLAN.md"}
    [task] = out["tasks_context"]["tasks"]
    assert (task["subject"], task["state"], task["id"]) == ("one", "in_progress", "a" * 32)
    assert out["tasks_context"]["revision"] == 2


def test_our_own_state_exports_to_agentscope_and_back() -> None:
    state = AgentState(session_id="s", user_id="u", summary="so far")
    rule = {"tool_name": "shell", "rule_content": "rm *", "behavior": "deny", "source": None}
    state.put_section("permission_context", {"mode": "default", "deny_rules": {"shell": [rule]}})
    task = {"id": "a" * 32, "subject": "one", "state": "in_progress"}
    state.put_section("tasks_context", {"tasks": [task], "revision": 1})
    state.put_section("memory", {"notes": ["likes trains"]})
    out = json.loads(write_state(state, "agentscope"))
    assert out["permission_context"]["deny_rules"] == {"shell": [rule]}
    assert out["hookagent_extensions"] == {"memory": {"notes": ["likes trains"]}}
    back = from_agentscope(out)
    again = AgentState.from_json(json.dumps(back))
    for name in ("permission_context", "tasks_context"):
        assert again.extensions[name] == state.extensions[name], name
    assert again.extensions["memory"] == {"notes": ["likes trains"]}
    assert again.summary == "so far"
    out["hookagent_extensions"]["context"] = []  # never a way round the converter's checks
    with pytest.raises(AgentScopeFormatError, match=r"hookagent_extensions\.context: is not a"):
        from_agentscope(out)


BROKEN = [
    (["context", 1, "role"], "WIZARD", "$.context[1].role: 'WIZARD' is not a role"),
    (
        ["context", 0, "timestamp"],
        "yesterday",
        "$.context[0].timestamp: 'yesterday' is not a date-time",
    ),
    (
        ["context", 2, "content", 0, "state"],
        "running",
        "$.context[2].content[0].state: 'running' is not a finished tool state",
    ),
    (
        ["permission_context", "deny_rules", "shell", 0, "behavior"],
        "maybe",
        "$.permission_context.deny_rules.shell[0].behavior: 'maybe' is not a behavior",
    ),
    (
        ["plan_mode_context", "plan_active"],
        "yes",
        "$.plan_mode_context.plan_active: should be true or false, got str",
    ),
    (
        ["tasks_context", "tasks", 1, "state"],
        "done",
        "$.tasks_context.tasks[1].state: 'done' is not a task state",
    ),
    (["session_id"], 7, "$.session_id: should be a string (the session id), got int"),
]


@pytest.mark.parametrize(
    ("where", "value", "message"), BROKEN, ids=[m.split(":")[0] for *_, m in BROKEN]
)
def test_a_broken_agentscope_file_names_the_json_path(where, value, message) -> None:
    doc = load("agentscope_python.json")
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    with pytest.raises(AgentScopeFormatError) as caught:
        read_state(json.dumps(doc), "f.json")
    assert str(caught.value).startswith("AgentScope state: " + message), str(caught.value)


FOREIGN = ['{"foo": 1}', "[1, 2]", '"text"', "not json at all", '{"messages": []}']


@pytest.mark.parametrize("text", FOREIGN)
def test_a_file_in_neither_format_says_what_is_accepted(text: str) -> None:
    with pytest.raises(ForeignStateFormat) as caught:
        read_state(text, "x.json")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("x.json is ")
    assert "accepted: a hookagent export" in message and "an AgentScope AgentState" in message


def test_our_format_with_a_bad_field_is_explained_in_our_words() -> None:
    doc = {"schema_version": 1, "session_id": "s", "context": [{"role": "USER", "content": []}]}
    with pytest.raises(InvalidState) as caught:
        read_state(json.dumps(doc), "f")
    message = str(caught.value)
    assert message == "$.context[0].role: 'USER' is not one of user, assistant, system, tool"
    doc = {"schema_version": 1, "session_id": "s", "context": [{"content": []}]}
    with pytest.raises(InvalidState, match=r"^\$\.context\[0\]\.role is missing$"):
        read_state(json.dumps(doc), "f")


def test_format_detection_and_a_forced_format() -> None:
    ours = AgentState(session_id="s").to_json()
    assert detect(json.loads(ours)) == "hookagent"
    assert detect(load("agentscope_java.json")) == "agentscope"
    assert detect(load("agentscope_python.json")) == "agentscope"
    with pytest.raises(ForeignStateFormat, match="drop --from agentscope"):
        read_state(ours, "f", "agentscope")
    with pytest.raises(ForeignStateFormat, match=r"no schema_version \(an AgentScope state\?"):
        read_state((DATA / "agentscope_python.json").read_text(), "f", "hookagent")
