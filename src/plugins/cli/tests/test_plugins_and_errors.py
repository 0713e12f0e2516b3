"""``hookagent plugins`` (including a plugin that cannot load) and the one-line error rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def broken_distribution(root: Path) -> Path:
    """A throwaway installed distribution (dist-info on PYTHONPATH) whose plugin raises."""
    root.mkdir()
    (root / "hookagent_broken_demo.py").write_text(
        "raise RuntimeError('this plugin is broken on purpose')\n"
    )
    info = root / "hookagent_broken_demo-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hookagent-broken-demo\nVersion: 0.0.1\n"
    )
    (info / "entry_points.txt").write_text("[hookagent]\nbroken-demo = hookagent_broken_demo\n")
    return root


@pytest.fixture
def env_with_broken(cli_env, tmp_path: Path) -> dict[str, str]:
    site = broken_distribution(tmp_path / "site")
    path = [str(site), *filter(None, [cli_env.get("PYTHONPATH")])]
    return {**cli_env, "PYTHONPATH": ":".join(path), "HOOKAGENT_BLOCKED_PLUGINS": ""}


def test_plugins_lists_hooks_and_reports_the_broken_one(hk, env_with_broken, cli_env) -> None:
    proc = hk("plugins", env=env_with_broken)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "cli                hookagent-cli 0.1.0" in out
    assert "hooks: hookagent_add_hookspecs, hookagent_register_cli_commands" in out
    assert "model-demo         hookagent-model-demo 0.1.0" in out
    assert (
        "hooks: hookagent_default_state_store, hookagent_register_session_logs, "
        "hookagent_register_state_stores" in out
    )
    assert (
        "FAILED: broken-demo (hookagent-broken-demo 0.0.1, hookagent_broken_demo): "
        "RuntimeError: this plugin is broken on purpose"
    ) in out
    assert "models: demo, openai" in out
    [commands] = [line for line in out.splitlines() if line.startswith("cli commands: ")]
    # the CLI's own commands; installed plugins add theirs (hookagent-plan-mode: plan)
    assert {"chat", "demo", "plugins", "run", "sessions"} <= set(commands[14:].split(", "))

    data = json.loads(hk("plugins", "--json", env=env_with_broken).stdout)
    failed = {p["name"]: p for p in data["not_loaded"]}
    assert failed["broken-demo"]["reason"] == "RuntimeError: this plugin is broken on purpose"
    assert failed["broken-demo"]["distribution"] == "hookagent-broken-demo"
    loaded = {p["name"]: p for p in data["loaded"]}
    assert "hookagent_register_models" in loaded["model-demo"]["hooks"]
    assert "file" in data["registered"]["store schemes"]

    # the broken plugin does not stop the other commands either
    env = {**env_with_broken, "HOOKAGENT_BLOCKED_PLUGINS": cli_env["HOOKAGENT_BLOCKED_PLUGINS"]}
    run = hk("run", "--user", "u", "-q", "hello", env=env)
    assert run.returncode == 0 and run.stdout.startswith("[demo model] You said")


def test_strict_mode_fails_commands_but_plugins_still_reports(hk, env_with_broken, cli_env) -> None:
    blocked = cli_env["HOOKAGENT_BLOCKED_PLUGINS"]
    env = {**env_with_broken, "HOOKAGENT_STRICT_PLUGINS": "1", "HOOKAGENT_BLOCKED_PLUGINS": blocked}
    proc = hk("run", "--user", "u", "hello", env=env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("hookagent: error: PluginLoadError: plugin 'broken-demo'")
    assert proc.stderr.count("\n") == 1
    listed = hk("plugins", env=env)
    assert listed.returncode == 0 and "FAILED: broken-demo" in listed.stdout


def test_blocked_plugins_are_listed_as_blocked(hk, cli_env) -> None:
    data = json.loads(hk("plugins", "--json").stdout)
    blocked = {p["name"] for p in data["not_loaded"] if p["status"] == "blocked"}
    assert {"model-openai", "store-sql", "store-redis"} <= blocked


ERRORS = [
    (
        ["run", "--store", "nope://x", "hi"],
        1,
        "StoreConfigurationError: no store plugin serves 'nope' URLs",
    ),
    (["run", "--model", "nosuch", "hi"], 1, "ModelError: no model provider named 'nosuch'"),
    (["run", "--session", "", "hi"], 1, "InvalidIdentifier: session_id must not be empty"),
    (
        ["run", "--user", "u" * 300, "hi"],
        1,
        "InvalidIdentifier: user_id is 300 characters, over 256",
    ),
    (
        ["sessions", "show", "--agent-id", "", "--user", "u"],
        1,
        "InvalidIdentifier: agent_id must not be empty",
    ),
    (["run", "--model-option", "delay=-1", "hi"], 1, "ModelError: model 'demo': delay must be"),
    (["run", "--model-option", "novalue", "hi"], 1, "ValueError: --model-option expects KEY=VALUE"),
    (["sessions", "list", "--limit", "0"], 1, "ValueError: --limit must be between 1 and 10000"),
    (["run"], 2, "usage: give a message, or answers (--approve/--reject/--result) to a"),
    (["bogus"], 2, "usage: argument COMMAND: invalid choice: 'bogus'"),
    (["sessions", "list", "--limit", "x"], 2, "usage: argument --limit: invalid int value"),
]


@pytest.mark.parametrize(
    ("args", "code", "message"), ERRORS, ids=[" ".join(a)[:40] for a, _, _ in ERRORS]
)
def test_errors_are_one_line_with_an_exit_code(hk, args, code, message) -> None:
    proc = hk(*args)
    assert proc.returncode == code
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hookagent: error: " + message), lines[0]


def test_traceback_on_request(hk) -> None:
    proc = hk("run", "--model", "nosuch", "--traceback", "hi")
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith("hookagent: error: ModelError:")


def test_unreachable_store_is_one_line(hk, cli_env) -> None:
    env = {
        **cli_env,
        "HOOKAGENT_BLOCKED_PLUGINS": "model-openai,store-sql,example-tools,example-store",
    }
    proc = hk("sessions", "list", "--store", "redis://127.0.0.1:1/0", env=env, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("hookagent: error: StoreUnavailable:"), proc.stderr
    assert proc.stderr.count("\n") == 1


def test_the_console_script_is_installed(cli_env) -> None:
    import subprocess
    import sys

    script = Path(sys.executable).with_name("hookagent")
    proc = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, env=cli_env, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.startswith("hookagent-cli "), proc.stderr


def test_plugins_shows_middleware_order_sections_and_presets(hk, cli_env) -> None:
    """Each plugin's declared middleware orders and the sections it owns (``HOOKAGENT_SECTIONS``)."""
    data = json.loads(hk("plugins", "--json").stdout)
    loaded = {p["name"]: p for p in data["loaded"]}
    assert loaded["permissions"]["middleware"] == ["tool order 200"]
    assert loaded["permissions"]["sections"] == ["permission_context"]
    assert loaded["plan-mode"]["middleware"] == ["tool order 100", "model order 400"]
    assert loaded["plan-mode"]["sections"] == ["plan_mode_context"]
    assert loaded["tasks"]["sections"] == ["tasks_context"]
    assert (
        loaded["memory"]["middleware"] == ["model order 100"] and not loaded["memory"]["sections"]
    )
    assert loaded["model-demo"]["middleware"] == [] and loaded["model-demo"]["sections"] == []
    assert "harness" in data["registered"]["cli presets"]
    out = hk("plugins").stdout
    assert "      middleware: tool order 900, model order 200" in out  # compaction
    assert "      sections: tasks_context" in out
    assert "cli presets: harness" in out


def test_an_unknown_preset_is_one_line(hk) -> None:
    proc = hk("run", "--preset", "nope", "-q", "hello")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        "hookagent: error: ConfigurationError: no plugin registers the preset 'nope' (known: harness"
    )
