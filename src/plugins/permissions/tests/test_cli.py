"""``hookagent permissions ...`` and the chat's y / n / always on a permission question."""

from __future__ import annotations

import json
from typing import Any


def test_the_commands_change_one_slot(hk: Any) -> None:
    s = ["--user", "ann", "--session", "p1"]
    assert hk("permissions", "set-mode", "dont_ask", *s).returncode == 0
    assert (
        hk("permissions", "deny", "shell", "command:rm -rf", "--source", "policy", *s).returncode
        == 0
    )
    assert hk("permissions", "allow", "get_weather", *s).returncode == 0
    assert hk("permissions", "ask", "slow_count", "arg:/n=~*", *s).returncode == 0
    assert hk("permissions", "add-dir", "w", "/srv/app", *s).returncode == 0
    shown = hk("permissions", "show", *s)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "mode: dont_ask",
        "working directory w: /srv/app (source: cli)",
        "deny  shell                command:rm -rf  (source: policy)",
        "ask   slow_count           arg:/n=~*  (source: cli)",
        "allow get_weather          (every call)  (source: cli)",
    ]
    section = json.loads(hk("permissions", "show", "--json", *s).stdout)
    assert section["allow_rules"]["get_weather"][0]["source"] == "cli"
    assert hk("permissions", "remove", "allow", "get_weather", *s).returncode == 0
    assert hk("permissions", "remove-dir", "w", *s).returncode == 0
    section = json.loads(hk("permissions", "show", "--json", *s).stdout)
    assert section["allow_rules"] == {} and section["working_directories"] == {}
    # another slot is untouched
    other = json.loads(
        hk("permissions", "show", "--json", "--user", "ann", "--session", "p2").stdout
    )
    assert other["mode"] == "default" and other["deny_rules"] == {}


def test_bad_input_is_one_typed_line_and_changes_nothing(hk: Any) -> None:
    s = ["--session", "p3"]
    hk("permissions", "set-mode", "explore", *s)
    for args, error in [
        (("set-mode", "yolo"), "InvalidPermissionMode: unknown mode 'yolo'"),
        (("allow", "t", "path:../x"), "InvalidPermissionRule: rule_content 'path:../x'"),
        (("deny", "bad name", "x"), "InvalidPermissionRule: tool_name 'bad name'"),
        (("remove", "deny", "shell"), "RuleNotFound: no deny rule shell in this slot"),
        (("add-dir", "w", "relative"), "InvalidWorkingDirectory"),
    ]:
        out = hk("permissions", *args, *s)
        assert out.returncode == 1 and f"hookagent: error: {error}" in out.stderr, out.stderr
    assert json.loads(hk("permissions", "show", "--json", *s).stdout)["mode"] == "explore"


def test_run_always_stores_an_allow_rule(hk: Any) -> None:
    s = ["--session", "r1"]
    hk("permissions", "set-mode", "default", *s)
    first = hk("run", "What's the weather in Lisbon?", "--json", *s)
    assert first.returncode == 3, first.stderr
    [pending] = json.loads(first.stdout)["pending"]
    assert pending["data"]["reason"] == "default mode: no rule allows this tool"
    done = hk("run", "--always", pending["tool_use_id"], *s)
    assert done.returncode == 0 and "get_weather says: Lisbon" in done.stdout
    section = json.loads(hk("permissions", "show", "--json", *s).stdout)
    assert section["allow_rules"]["get_weather"][0]["source"] == "session"
    again = hk("run", "What's the weather in Paris?", *s)
    assert again.returncode == 0 and "get_weather says: Paris" in again.stdout


def test_chat_asks_y_then_n_then_always(hk: Any, pty_cli: Any) -> None:
    s = ["--user", "ann", "--session", "c1"]
    assert hk("permissions", "set-mode", "default", *s).returncode == 0
    chat = pty_cli("chat", *s)
    chat.expect(r"you> ")
    chat.send("What's the weather in Lisbon?\n")
    chat.expect(
        r"\? get_weather\(city='Lisbon'\): Allow get_weather\(city='Lisbon'\)\? default mode"
    )
    chat.expect(r"approve\? \[y/N/always, or a reason to refuse\] ")
    chat.send("y\n")
    chat.expect(r"get_weather says: Lisbon")
    chat.expect(r"you> ")
    chat.send("What's the weather in Paris?\n")
    chat.expect(r"\? get_weather\(city='Paris'\)")
    chat.expect(r"approve\? ")
    chat.send("n\n")
    chat.expect(r"get_weather did not succeed \(denied\): refused in chat")
    chat.expect(r"you> ")
    chat.send("What's the weather in Oslo?\n")
    chat.expect(r"approve\? ")
    chat.send("always\n")
    chat.expect(r"get_weather says: Oslo")
    chat.expect(r"you> ")
    chat.send("What's the weather in Rome?\n")  # remembered: no question
    chat.expect(r"get_weather says: Rome")
    chat.expect(r"you> ")
    chat.send("/exit\n")
    assert chat.wait() == 0
    assert "get_weather(city='Rome'):" not in chat.output
    section = json.loads(hk("permissions", "show", "--json", *s).stdout)
    assert [r["source"] for r in section["allow_rules"]["get_weather"]] == ["session"]
