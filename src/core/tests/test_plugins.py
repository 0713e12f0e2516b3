"""Plugin loading: one manager per agent, broken plugins reported (or fatal in strict mode)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pluggy
import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, create_plugin_manager, hookimpl
from hookagent.plugins import HookagentPluginManager


def _dist(root: Path, name: str, module_source: str) -> None:
    """A minimal installed distribution: a dist-info with an entry point, and its module."""
    info = root / f"{name}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[hookagent]\n{name} = {name}_mod\n")
    (root / f"{name}_mod.py").write_text(textwrap.dedent(module_source))


SCRIPT = """
import anyio, os
from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel
config = AgentConfig(model=ScriptedModel(["hello"]), state_store=InMemoryAgentStateStore())
agent = config.build()
pm = config.kernel.pm
print("INFOS", sorted((p.name, p.status, p.distribution, p.version) for p in pm.plugin_infos))
print("FAILED", [p.error for p in pm.failed])
print("TOOLS", sorted(config.kernel.tools))
print("REPLY", agent.call_sync("hi", RuntimeContext(user_id="u", session_id="s")).text)
"""


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    _dist(tmp_path, "brokenplug", "raise ImportError('the broken plugin cannot import numpyy')\n")
    _dist(
        tmp_path,
        "goodplug",
        """
        from hookagent import hookimpl

        def shout(text: str) -> str:
            "Upper-case a text."
            return text.upper()

        @hookimpl
        def hookagent_register_tools(register):
            register(shout)
    """,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKAGENT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return env


def _run(env: dict[str, str], **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_broken_plugin_is_reported_not_fatal(plugin_env: dict[str, str]) -> None:
    out = _run(plugin_env)
    assert out.returncode == 0, out.stderr
    assert "('brokenplug', 'failed', 'brokenplug', '1.2.3')" in out.stdout
    assert "('goodplug', 'loaded', 'goodplug', '1.2.3')" in out.stdout
    assert "ImportError: the broken plugin cannot import numpyy" in out.stdout
    assert "'shout'" in out.stdout and "REPLY hello" in out.stdout
    assert "brokenplug" in out.stderr and "failed to load" in out.stderr


def test_strict_mode_refuses_to_start(plugin_env: dict[str, str]) -> None:
    out = _run(plugin_env, HOOKAGENT_STRICT_PLUGINS="1")
    assert out.returncode != 0
    assert "PluginLoadError" in out.stderr
    assert "plugin 'brokenplug' from distribution brokenplug 1.2.3 failed to load" in out.stderr


def test_blocked_and_autoload_off(plugin_env: dict[str, str]) -> None:
    out = _run(plugin_env, HOOKAGENT_BLOCKED_PLUGINS="brokenplug, goodplug")
    assert out.returncode == 0, out.stderr
    assert "'blocked'" in out.stdout and "'shout'" not in out.stdout and "FAILED []" in out.stdout
    out = _run(plugin_env, HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    assert "INFOS []" in out.stdout and "TOOLS []" in out.stdout


def test_trace_logs_hook_calls(plugin_env: dict[str, str]) -> None:
    script = "import logging; logging.basicConfig(level=logging.INFO)\n" + SCRIPT
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**plugin_env, "HOOKAGENT_TRACE_HOOKS": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert (
        "hook hookagent_state_loaded" in out.stderr
        and "hook hookagent_wrap_tool_call" in out.stderr
    )


def test_misspelled_hook_fails_loudly() -> None:
    class Typo:
        @hookimpl
        def hookagent_registr_tools(self, register):  # type: ignore[no-untyped-def]
            pass

    with pytest.raises(pluggy.PluginValidationError, match="hookagent_registr_tools"):
        create_plugin_manager([Typo()], autoload=False)


def test_one_manager_per_configuration() -> None:
    a = AgentConfig(autoload_plugins=False, state_store=InMemoryAgentStateStore())
    b = AgentConfig(autoload_plugins=False, state_store=InMemoryAgentStateStore())
    assert isinstance(a.kernel.pm, HookagentPluginManager)
    assert a.kernel.pm is not b.kernel.pm
    assert a.build().kernel is a.build().kernel


def test_wrong_hookimpl_argument_is_refused() -> None:
    class Wrong:
        @hookimpl
        def hookagent_register_tools(self, registr):  # type: ignore[no-untyped-def]
            pass

    with pytest.raises(pluggy.PluginValidationError, match="registr"):
        create_plugin_manager([Wrong()], autoload=False)


def test_a_misspelled_hook_is_our_plugin_validation_error_naming_plugin_and_hook() -> None:
    import pluggy
    from hookagent import AgentConfig, InMemoryAgentStateStore, PluginValidationError, hookimpl

    class Misspelled:
        @hookimpl
        def hookagent_on_run_evnt(self, event: object) -> None: ...

    class WrongArgument:
        @hookimpl
        def hookagent_on_run_event(self, evnt: object) -> None: ...

    for plugin, hook in (
        (Misspelled(), "hookagent_on_run_evnt"),
        (WrongArgument(), "hookagent_on_run_event"),
    ):
        config = AgentConfig(
            plugins=[plugin], autoload_plugins=False, state_store=InMemoryAgentStateStore()
        )
        try:
            config.build()
        except PluginValidationError as exc:
            assert exc.hook == hook and exc.plugin is plugin
            assert isinstance(exc, pluggy.PluginValidationError)  # old handlers still work
        else:
            raise AssertionError("a misspelled hook was accepted")
