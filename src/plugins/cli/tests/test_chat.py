"""``hookagent chat`` in a pseudo-terminal: streaming, tool calls, Ctrl-C, resume."""

from __future__ import annotations

import json

from hookagent import AgentState
from hookagent_model_openai.testing import (
    error_reply,
    fake_openai_server,
    text_stream,
    tool_call_stream,
)

PROMPT = r"you> "


def saved(hk, user: str, session: str, env=None) -> AgentState:
    proc = hk("sessions", "export", "--user", user, "--session", session, env=env)
    assert proc.returncode == 0, proc.stderr
    return AgentState.from_json(proc.stdout)


def assert_consistent(state: AgentState) -> dict[str, str]:
    uses = [u.id for m in state.context for u in m.tool_uses]
    results = {r.id: r.state for m in state.context for r in m.tool_results}
    assert uses and all(u in results for u in uses), (uses, results)
    return results


def test_chat_with_the_demo_model_interrupt_and_resume(pty_cli, hk) -> None:
    chat = pty_cli("chat", "--user", "ann", "--session", "c1")
    chat.expect(r"hookagent chat: user 'ann', session 'c1'")
    chat.expect(PROMPT)
    chat.send("What's the weather in Oslo?\n")
    chat.expect(r"agent> \[demo model\] Calling get_weather\(city='Oslo'\)\.")
    chat.expect(r"· calling get_weather\(city='Oslo'\)")
    chat.expect(r"· get_weather → success: Oslo:")
    chat.expect(r"agent> \[demo model\] get_weather says: Oslo: ")
    chat.expect(PROMPT)

    chat.send("count to 30 slowly\n")
    chat.expect(r"· calling slow_count\(n=30\)")
    chat.send("\x03")  # Ctrl-C on the terminal: SIGINT to the chat, mid-tool
    chat.expect(r"\^C interrupting… \(Ctrl-C again to quit\)")
    chat.expect(r"· interrupted \(user\): 1 open tool call closed as 'interrupted', state saved")
    chat.expect(r"agent> \[interrupted\]")
    chat.expect(PROMPT)  # the chat goes on

    chat.send("what have we done so far?\n")
    chat.expect(r"“count to 30 slowly” → interrupted \(slow_count interrupted\)")
    chat.expect(PROMPT)
    chat.send("\x03")  # Ctrl-C at the prompt leaves
    assert chat.wait() == 0
    assert "bye: the conversation is saved" in chat.output
    assert "Traceback" not in chat.output

    state = saved(hk, "ann", "c1")
    results = assert_consistent(state)
    assert sorted(results.values()) == ["interrupted", "success"]
    assert len(state.context) == 10

    again = pty_cli("chat", "--user", "ann", "--session", "c1", "--history", "2")
    again.expect(r"resuming: 10 earlier messages")
    again.expect(r"  10 assistant  \[demo model\] This session already holds 8 messages")
    again.expect(PROMPT)
    again.send("/history\n")
    again.expect(r"version 3, 10 messages, 2 tool calls, 2 results")
    again.expect(PROMPT)
    again.send("\x04")  # Ctrl-D leaves too
    assert again.wait() == 0


def test_chat_against_an_openai_compatible_server(pty_cli, hk, cli_env) -> None:
    env = {
        **cli_env,
        "HOOKAGENT_BLOCKED_PLUGINS": "store-sql,store-redis,example-tools,example-store",
    }
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HOOKAGENT_OPENAI_BASE_URL"):
        env.pop(name, None)
    script = [
        tool_call_stream([("call_w", "get_weather", ['{"city": ', '"Rome"}'])], text=["Checking."]),
        text_stream(["It is ", "mild in ", "Rome today."]),
        tool_call_stream([("call_c", "slow_count", ['{"n": 40}'])]),
        text_stream(["Understood, ", "stopped."]),
    ]
    with fake_openai_server(script) as server:
        chat = pty_cli(
            "chat",
            "--user",
            "olga",
            "--session",
            "o1",
            "--model",
            "openai",
            "--demo-tools",
            "--model-option",
            "model=fake-model",
            "--model-option",
            f"base_url={server.base_url}",
            env=env,
        )
        chat.expect(PROMPT)
        chat.send("weather in Rome?\n")
        chat.expect(r"agent> Checking\.")
        chat.expect(r"· calling get_weather\(city='Rome'\)")
        chat.expect(r"· get_weather → success: Rome: ")
        chat.expect(r"agent> It is mild in Rome today\.")
        chat.expect(PROMPT)

        chat.send("now count to 40\n")
        chat.expect(r"· calling slow_count\(n=40\)")
        chat.send("\x03")
        chat.expect(r"agent> \[interrupted\]")
        chat.expect(PROMPT)

        chat.send("ok, stop there\n")
        chat.expect(r"agent> Understood, stopped\.")
        chat.expect(PROMPT)
        chat.send("\x03")
        assert chat.wait() == 0
        assert server.attempts == 4
        # the model was shown the interrupted call's result: the history stayed well formed
        last = server.requests[-1].body["messages"]
        tool_msgs = [m for m in last if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_msgs] == ["call_w", "call_c"]
        assert json.dumps(last[-1]) and last[-1]["role"] == "user"
        assert server.requests[0].body.get("stream") is True

    state = saved(hk, "olga", "o1", env=env)
    results = assert_consistent(state)
    assert results == {"call_w": "success", "call_c": "interrupted"}
    assert state.context[-1].text == "Understood, stopped."


def openai_env(cli_env):
    env = {
        **cli_env,
        "HOOKAGENT_BLOCKED_PLUGINS": "store-sql,store-redis,example-tools,example-store",
    }
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HOOKAGENT_OPENAI_BASE_URL"):
        env.pop(name, None)
    return env


def test_chat_reports_a_model_error_and_goes_on(pty_cli, hk, cli_env) -> None:
    env = openai_env(cli_env)
    script = [
        error_reply(401, "the key is wrong", code="invalid_api_key"),  # not retried
        error_reply(503, "overloaded"),  # retried once: a progress line, not a log line
        text_stream(["Back ", "again."]),
        text_stream(["Still ", "here."]),
    ]
    with fake_openai_server(script) as server:
        chat = pty_cli(
            "chat",
            "--user",
            "pia",
            "--session",
            "e1",
            "--model",
            "openai",
            "--model-option",
            "model=fake-model",
            "--model-option",
            f"base_url={server.base_url}",
            "--model-option",
            "backoff_base=0.01",
            env=env,
        )
        chat.expect(PROMPT)
        chat.send("hello?\n")
        failed = chat.expect(r"· failed: (\w+): ([^\n]*)\n")
        assert failed.group(1) == "ModelAuthError" and "the key is wrong" in failed.group(2)
        chat.expect(r"your message was saved; type another message to go on, or /exit")
        chat.expect(PROMPT)  # the chat is still open

        chat.send("are you there?\n")
        chat.expect(r"· retrying: openai:fake-model: [^\n]*overloaded[^\n]*; retry 1 in ")
        chat.expect(r"agent> Back again\.")
        chat.expect(PROMPT)
        chat.send("and now?\n")
        chat.expect(r"agent> Still here\.")
        chat.expect(PROMPT)
        chat.send("/exit\n")
        assert chat.wait() == 0
        assert server.attempts == 4
        # the model saw the whole conversation, the failed turn's input included
        sent = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
        assert sent == ["hello?", "are you there?", "and now?"]
    out = chat.output
    assert out.count("the key is wrong") == 1  # printed once
    assert "Traceback" not in out and "WARNING" not in out
    assert "hookagent: error:" not in out
    state = saved(hk, "pia", "e1", env=env)
    assert [m.role for m in state.context] == ["user", "user", "assistant", "user", "assistant"]
    assert state.context[-1].text == "Still here."
