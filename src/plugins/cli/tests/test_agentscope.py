"""The AgentScope converter on its own (pure functions), on realistic Java 2.0 and Python 2.x
AgentState files written from the reference's field tables."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from hookagent import AgentState, PermissionRule, Todo
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

    perm = state.permission_context
    assert perm.mode == "accept_edits"
    assert perm.rules == [
        PermissionRule("read_file", "allow", "/home/alice/trips/**"),
        PermissionRule("search_trains", "allow", None),
        PermissionRule("shell", "deny", "rm -rf *"),
        PermissionRule("write_file", "ask", "**/*.md"),
    ]  # the passthrough rule is not a decision we hold: the extension keeps it
    kept = state.extensions["agentscope"]["permission_context"]["original"]
    assert kept["ask_rules"]["write_file"][1]["behavior"] == "passthrough"
    assert kept["working_directories"]["workspace"]["path"] == "/home/alice/trips"
    assert (state.plan_mode_context.active, state.plan_mode_context.plan_file) == (
        True,
        "plans/porto.md",
    )
    tasks = state.tasks_context
    assert tasks.todos == [
        Todo("Find a train Lisbon -> Porto", "completed", "5f0c6b8e2a9d4e1f8b7a6c5d4e3f2a1b"),
        Todo("Write the plan", "in_progress", "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"),
    ]
    assert (tasks.revision, tasks.objective) == (3, "Get Alice to Porto on 5 June")
    assert state.tool_context.activated_groups == ["travel", "files"]
    assert "read_file_cache" not in json.dumps(state.extensions)  # read caches are dropped
    assert sorted(state.extensions) == ["agentscope"]


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
    assert java.permission_context.mode == "accept_edits"  # ACCEPT_EDITS
    assert java.context == py.context
    assert java.permission_context == py.permission_context
    assert java.tasks_context == py.tasks_context
    assert java.plan_mode_context == py.plan_mode_context


def test_export_applies_our_changes_over_what_agentscope_had() -> None:
    state, _ = read_state((DATA / "agentscope_python.json").read_text(), "f")
    state.permission_context.rules.append(PermissionRule("shell", "ask", "git *"))
    state.permission_context.mode = "explore"
    state.tasks_context.todos[1].status = "completed"
    state.tasks_context.todos.append(Todo("Buy the ticket"))
    state.tasks_context.revision = 4
    out = to_agentscope(json.loads(state.to_json()))
    perm = out["permission_context"]
    assert perm["mode"] == "explore"
    assert perm["ask_rules"]["shell"] == [
        {"tool_name": "shell", "rule_content": "git *", "behavior": "ask", "source": None}
    ]
    assert perm["ask_rules"]["write_file"][0]["source"] == "user_settings"  # kept
    assert perm["ask_rules"]["write_file"][1]["behavior"] == "passthrough"  # kept
    assert perm["deny_rules"]["shell"][0]["source"] == "policy"
    assert perm["working_directories"]["downloads"]["source"] == "user_settings"
    tasks = out["tasks_context"]
    assert [t["state"] for t in tasks["tasks"]] == ["completed", "completed", "pending"]
    assert tasks["tasks"][1]["owner"] == "Friday"  # fields we do not hold come back
    assert tasks["tasks"][1]["blocked_by"] == ["5f0c6b8e2a9d4e1f8b7a6c5d4e3f2a1b"]
    new = tasks["tasks"][2]
    assert new["subject"] == "Buy the ticket" and len(new["id"]) == 32
    assert new["blocks"] == [] and new["metadata"] == {}
    assert tasks["revision"] == 4


def test_our_own_state_exports_to_agentscope_and_back() -> None:
    state = AgentState(session_id="s", user_id="u", summary="so far")
    state.permission_context.rules.append(PermissionRule("shell", "deny", "rm *"))
    state.tasks_context.todos.append(Todo("one", "in_progress", "a" * 32))
    state.put_section("memory", {"notes": ["likes trains"]})
    out = json.loads(write_state(state, "agentscope"))
    assert out["permission_context"]["deny_rules"] == {
        "shell": [
            {"tool_name": "shell", "rule_content": "rm *", "behavior": "deny", "source": None}
        ]
    }
    assert out["hookagent_extensions"] == {"memory": {"notes": ["likes trains"]}}
    back = from_agentscope(out)
    again = AgentState.from_json(json.dumps(back))
    assert again.permission_context == state.permission_context
    assert again.tasks_context == state.tasks_context
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
