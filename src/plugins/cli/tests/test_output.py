"""What the CLI prints: each error once, interrupts that say what they closed, honest counts."""

from __future__ import annotations

from pathlib import Path

from hookagent import AgentState, Msg, ToolResultBlock, ToolUseBlock
from hookagent.messages import TextBlock
from hookagent_model_openai.testing import error_reply, fake_openai_server


def test_a_failed_run_prints_its_error_once(hk, cli_env) -> None:
    env = {**cli_env, "HOOKAGENT_BLOCKED_PLUGINS": "store-sql,store-redis,example-tools"}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HOOKAGENT_OPENAI_BASE_URL"):
        env.pop(name, None)
    with fake_openai_server([error_reply(401, "the key is wrong")]) as server:
        proc = hk(
            "run",
            "--model",
            "openai",
            "--model-option",
            "model=fake-model",
            "--model-option",
            f"base_url={server.base_url}",
            "hello",
            env=env,
        )
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hookagent: error: ModelAuthError: openai:fake-model: ")
    assert proc.stderr.count("the key is wrong") == 1


def test_an_interrupt_with_no_open_tool_call_does_not_claim_one(pty_cli) -> None:
    chat = pty_cli("chat", "--user", "ivo", "--session", "i1", "--model-option", "delay=1")
    chat.expect(r"you> ")
    chat.send("tell me a story please, a long one\n")
    chat.expect(r"agent> \[demo")  # streaming text: no tool is running
    chat.send("\x03")
    line = chat.expect(r"· interrupted \(user\): ([^\n]*)\n")
    assert line.group(1).startswith("state saved at version 1"), line.group(0)
    chat.expect(r"you> ")
    chat.send("/exit\n")
    assert chat.wait() == 0
    assert "closed as 'interrupted'" not in chat.output


def test_show_counts_calls_and_results_when_a_server_reuses_ids(hk, tmp_path: Path) -> None:
    state = AgentState(session_id="reuse", user_id="ann")
    for city in ("Oslo", "Rome"):  # a server that calls every first tool call "call_0"
        state.context.extend(
            [
                Msg.user(f"weather in {city}?"),
                Msg.assistant([ToolUseBlock("call_0", "get_weather", {"city": city})]),
                Msg("tool", [ToolResultBlock("call_0", "get_weather", (TextBlock("mild"),))]),
                Msg.assistant("mild"),
            ]
        )
    state.context.append(Msg.assistant([ToolUseBlock("call_0", "get_weather", {"city": "Bern"})]))
    path = tmp_path / "reuse.json"
    path.write_text(state.to_json())
    assert hk("sessions", "import", str(path)).returncode == 0
    shown = hk("sessions", "show", "--user", "ann", "--session", "reuse")
    assert shown.returncode == 0, shown.stderr
    assert "9 messages, 3 tool calls, 2 results" in shown.stdout
    # the third call, the only one without a result, is the one named
    assert "WARNING: tool calls without a result: call_0" in shown.stdout
