"""Answering a suspended turn from the CLI: ``run`` exits 3 and says how to answer;
``run --approve/--reject/--result`` continues the turn; ``chat`` asks in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# A stateless model (it reads the last message) and a confirm policy, as a user would write
# them: the model asks for ``deploy`` after a user message, then echoes the tool's result.
ASKING = '''
from hookagent import Msg, ModelResponse, ToolSuspended, ToolUseBlock, ask, hookimpl


def deploy(env: str) -> str:
    """Deploy."""
    return f"deployed to {env}"


def wait_ci(branch: str) -> str:
    """Start CI; its result comes from outside."""
    raise ToolSuspended(f"CI started for {branch}")


class Model:
    name = "asking"

    async def generate(self, request, ctx):
        last = request.messages[-1]
        if last.role == "user":
            tool = "wait_ci" if "test" in last.text else "deploy"
            args = {"branch": "main"} if tool == "wait_ci" else {"env": "prod"}
            use = ToolUseBlock(f"call-{len(request.messages)}", tool, args)
            return ModelResponse(Msg.assistant([use]))
        said = "; ".join(f"{r.state}: {r.text}" for r in last.tool_results)
        return ModelResponse(Msg.assistant(said))


@hookimpl
def hookagent_register_models(register):
    register("asking", lambda **options: Model())


@hookimpl
def hookagent_wrap_tool_call():
    async def confirm(call, ctx, call_next):
        if call.use.name == "deploy" and not call.approved:
            return ask(call, "deploy to production?")
        return await call_next(call)

    return confirm
'''


@pytest.fixture
def env(tmp_path: Path, cli_env: dict[str, str]) -> dict[str, str]:
    code = tmp_path / "code"
    code.mkdir()
    (code / "asking.py").write_text(ASKING)
    return {**cli_env, "PYTHONPATH": str(code)}


COMMON = ["--plugin", "asking", "--model", "asking", "--user", "ops", "--session", "d1"]
TOOLS = ["--tool", "asking:deploy", "--tool", "asking:wait_ci"]


@pytest.mark.parametrize(
    ("flag", "expect"),
    [
        ("--approve {id}", "success: deployed to prod"),
        ("--always {id}", "success: deployed to prod"),  # remember: for a permission plugin
        ("--reject {id}:not today", "denied: not today"),
    ],
)
def test_run_suspends_then_an_answer_continues_the_turn(hk, env, flag: str, expect: str) -> None:
    first = hk("run", "ship it", *COMMON, *TOOLS, "--json", env=env)
    assert first.returncode == 3, first.stderr
    data = json.loads(first.stdout)
    assert data["generate_reason"] == "SUSPENDED" and data["turn_id"]
    [pending] = data["pending"]
    assert (pending["tool"], pending["kind"]) == ("deploy", "confirm")
    text = hk("run", "ship it again", *COMMON, *TOOLS, "--session", "d2", env=env)
    assert text.returncode == 3 and "waiting: deploy(env='prod') [confirm]" in text.stdout
    assert f"--approve {pending['tool_use_id']}" in text.stdout
    answer = flag.format(id=pending["tool_use_id"]).split(" ", 1)
    second = hk("run", *answer, *COMMON, *TOOLS, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == expect
    again = hk("run", *answer, *COMMON, *TOOLS, env=env)
    assert again.returncode != 0 and "has no pending interaction" in again.stderr


def test_run_answers_an_outside_result_and_refuses_message_with_answers(hk, env) -> None:
    first = hk("run", "test main", *COMMON, *TOOLS, "--json", env=env)
    [pending] = json.loads(first.stdout)["pending"]
    assert pending["kind"] == "external_result"
    both = hk("run", "hi", "--result", f"{pending['tool_use_id']}=ok", *COMMON, *TOOLS, env=env)
    assert both.returncode != 0 and "not both" in both.stderr
    done = hk("run", "--result", f"{pending['tool_use_id']}=412 passed", *COMMON, *TOOLS, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "success: 412 passed"


def test_chat_asks_and_goes_on(pty_cli, env) -> None:
    chat = pty_cli("chat", *COMMON, *TOOLS, env=env)
    chat.expect(r"you> ")
    chat.send("ship it\n")
    chat.expect(r"\? deploy\(env='prod'\): deploy to production\?")
    chat.expect(r"approve\? \[y/N/always, or a reason to refuse\] ")
    chat.send("y\n")
    chat.expect(r"agent> success: deployed to prod")
    chat.expect(r"you> ")
    chat.send("ship it\n")
    chat.expect(r"approve\? ")
    chat.send("not on a Friday\n")
    chat.expect(r"agent> denied: not on a Friday")
    chat.expect(r"you> ")
    chat.send("/exit\n")
    assert chat.wait() == 0
