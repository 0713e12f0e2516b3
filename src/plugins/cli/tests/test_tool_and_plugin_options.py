"""``--tool MODULE:FUNCTION`` and ``--plugin MODULE``: the user's own tools and plugins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookagent import AgentState
from hookagent_model_openai.testing import fake_openai_server, text_stream, tool_call_stream

TOOLS = '''
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper() + "!"

NOT_A_FUNCTION = 42
'''

PLUGIN = """
from hookagent.hookspecs import hookimpl

@hookimpl
def hookagent_before_persist(state, ctx, outcome):
    state.put_section("stamped", {"outcome": outcome})
"""


@pytest.fixture
def user_code(tmp_path: Path, cli_env: dict[str, str]) -> dict[str, str]:
    code = tmp_path / "code"
    code.mkdir()
    (code / "mytools.py").write_text(TOOLS)
    (code / "myplugin.py").write_text(PLUGIN)
    (code / "broken_tools.py").write_text("import no_such_dependency_xyz\n")
    env = {
        **cli_env,
        "PYTHONPATH": str(code),
        "HOOKAGENT_BLOCKED_PLUGINS": "store-sql,store-redis,example-tools,example-store",
    }
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HOOKAGENT_OPENAI_BASE_URL"):
        env.pop(name, None)
    return env


def test_a_tool_and_a_plugin_for_one_run(hk, user_code) -> None:
    script = [
        tool_call_stream([("call_s", "shout", ['{"text": "hi"}'])]),
        text_stream(["It said HI!"]),
    ]
    with fake_openai_server(script) as server:
        common = ["--model", "openai", "--model-option", "model=m"]
        common += ["--model-option", f"base_url={server.base_url}", "--user", "t"]
        proc = hk(
            "run",
            *common,
            "--tool",
            "mytools:shout",
            "--plugin",
            "myplugin",
            "say hi",
            env=user_code,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "It said HI!"
        assert "· shout → success: HI!" in proc.stderr
        offered = [t["function"]["name"] for t in server.requests[0].body["tools"]]
        assert offered == ["shout"]
    exported = hk("sessions", "export", "--user", "t", env=user_code)
    state = AgentState.from_json(exported.stdout)
    results = [r for m in state.context for r in m.tool_results]
    assert [(r.name, r.text, r.state) for r in results] == [("shout", "HI!", "success")]
    assert state.extensions["stamped"] == {"outcome": "success"}  # the plugin ran

    # for one invocation only: the next run without the options has neither
    plain = hk("run", "--user", "t", "-q", "--json", "again", env=user_code)
    assert plain.returncode == 0, plain.stderr
    again = AgentState.from_json(hk("sessions", "export", "--user", "t", env=user_code).stdout)
    assert json.loads(plain.stdout)["messages"] == len(again.context)
    assert again.extensions["stamped"] == {"outcome": "success"}  # written once, kept


BAD = [
    (
        ["--tool", "nosuchmod_xyz:f"],
        "SpecModuleNotFound: --tool 'nosuchmod_xyz:f': no module named 'nosuchmod_xyz'",
    ),
    (
        ["--tool", "mytools:nope"],
        "SpecAttributeNotFound: --tool 'mytools:nope': module 'mytools' has no attribute 'nope'",
    ),
    (
        ["--tool", "mytools:NOT_A_FUNCTION"],
        "SpecNotCallable: --tool 'mytools:NOT_A_FUNCTION': 'NOT_A_FUNCTION' is not a function (it is int)",
    ),
    (["--tool", "mytools"], "SpecAttributeNotFound: --tool 'mytools': expected MODULE:FUNCTION"),
    (
        ["--tool", "broken_tools:f"],
        "SpecImportFailed: --tool 'broken_tools:f': importing 'broken_tools' failed: ModuleNotFoundError: No module named 'no_such_dependency_xyz'",
    ),
    (
        ["--tool", "../etc:f"],
        "SpecModuleNotFound: --tool '../etc:f': '../etc' is not a module name",
    ),
    (
        ["--plugin", "nosuchplugin_xyz"],
        "SpecModuleNotFound: --plugin 'nosuchplugin_xyz': no module named",
    ),
    (
        ["--plugin", "myplugin:missing"],
        "SpecAttributeNotFound: --plugin 'myplugin:missing': module 'myplugin' has no attribute",
    ),
]


@pytest.mark.parametrize(("extra", "message"), BAD, ids=[" ".join(e) for e, _ in BAD])
def test_a_bad_spec_is_one_typed_line(hk, user_code, extra, message) -> None:
    for command in (["run", "hi"], ["chat"]):
        proc = hk(*command[:1], *extra, *command[1:], env=user_code, stdin="")
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("hookagent: error: " + message), lines[0]
