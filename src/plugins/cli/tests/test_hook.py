"""The CLI's own hook, called through pluggy: monitors see it, clashes name both plugins."""

from __future__ import annotations

import argparse
import sys
import types

import pytest
from hookagent.errors import HookContractError
from hookagent.hookspecs import hookimpl
from hookagent.testing import HookRecorder
from hookagent_cli.main import build_parser, collect_commands
from hookagent_cli.pm import cli_plugin_manager


def _plugin(name: str, command: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def run(args: argparse.Namespace) -> int:
        return 7

    @hookimpl(optionalhook=True)
    def hookagent_register_cli_commands(register):  # type: ignore[no-untyped-def]
        register(command, help="a test command", configure=lambda p: None, run=run)

    module.hookagent_register_cli_commands = hookagent_register_cli_commands  # type: ignore[attr-defined]
    return module


@pytest.fixture
def pm(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", "1")
    return cli_plugin_manager()


def test_hook_hookagent_register_cli_commands(pm) -> None:  # type: ignore[no-untyped-def]
    pm.register(_plugin("hookagent_prune", "prune"), name="prune-plugin")
    recorder = HookRecorder(pm)
    try:
        registry = collect_commands(pm)
    finally:
        recorder.close()
    calls = recorder.named("hookagent_register_cli_commands")
    # one call per implementing plugin, each seen by the monitor, in pluggy's call order
    assert [c.plugins for c in calls] == [("prune-plugin",), ("cli",)]
    assert all(c.kwargs["register"] is registry for c in calls)
    assert registry.commands["prune"].plugin == "prune-plugin"
    assert registry.commands["chat"].plugin == "cli"
    args = build_parser(registry).parse_args(["prune"])
    assert args.handler(args) == 7


def test_a_command_registered_twice_names_both_plugins(pm) -> None:  # type: ignore[no-untyped-def]
    pm.register(_plugin("hookagent_other_run", "run"), name="other-run")
    with pytest.raises(
        HookContractError, match="'run' is registered twice: by 'other-run' and by 'cli'"
    ):
        collect_commands(pm)


def test_the_plugin_manager_reads_no_private_pluggy_state() -> None:
    import inspect

    from hookagent_cli import main, pm

    for module in (main, pm):
        assert "_call_history" not in inspect.getsource(module)
        assert "impl.function" not in inspect.getsource(module)
    assert sys.modules["hookagent_cli.pm"] is pm


def _preset_plugin(name: str, preset: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def apply(settings: dict[str, object]) -> dict[str, object]:
        return {**settings, "tool_groups": ["memory"]}

    @hookimpl(optionalhook=True)
    def hookagent_register_cli_presets(register):  # type: ignore[no-untyped-def]
        register(preset, apply, help="a test preset")

    module.hookagent_register_cli_presets = hookagent_register_cli_presets  # type: ignore[attr-defined]
    return module


def test_hook_hookagent_register_cli_presets(pm) -> None:  # type: ignore[no-untyped-def]
    from hookagent_cli.options import presets

    pm.register(_preset_plugin("hookagent_mine", "mine"), name="mine-plugin")
    recorder = HookRecorder(pm)
    try:
        found = presets(pm)
    finally:
        recorder.close()
    calls = recorder.named("hookagent_register_cli_presets")
    assert [c.plugins for c in calls] == [("mine-plugin",)]  # one call per implementing plugin
    apply, help_text, plugin = found["mine"]
    assert (help_text, plugin) == ("a test preset", "mine-plugin")
    assert apply({"model": "demo"}) == {"model": "demo", "tool_groups": ["memory"]}


def test_a_preset_registered_twice_names_both_plugins(pm) -> None:  # type: ignore[no-untyped-def]
    from hookagent_cli.options import presets

    pm.register(_preset_plugin("hookagent_a", "same"), name="a-plugin")
    pm.register(_preset_plugin("hookagent_b", "same"), name="b-plugin")
    with pytest.raises(
        HookContractError,
        match=r"'same' is registered twice: by '[ab]-plugin' and by '[ab]-plugin'",
    ):
        presets(pm)


def test_a_command_registered_by_module_is_imported_when_it_runs(
    pm, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "hookagent_lazy_cmd.py").write_text(
        "def configure(p):\n    p.add_argument('--flag', action='store_true')\n\n"
        "def run(args):\n    return 5 if args.flag else 6\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hookagent_lazy_cmd", raising=False)
    plugin = types.ModuleType("hookagent_lazy_plugin")

    @hookimpl(optionalhook=True)
    def hookagent_register_cli_commands(register):  # type: ignore[no-untyped-def]
        register("lazy", help="a lazy command", module="hookagent_lazy_cmd", common=False)

    plugin.hookagent_register_cli_commands = hookagent_register_cli_commands  # type: ignore[attr-defined]
    pm.register(plugin, name="lazy-plugin")
    registry = collect_commands(pm)
    build_parser(registry, "")  # `hookagent --help`: the module is not needed
    assert "hookagent_lazy_cmd" not in sys.modules
    args = build_parser(registry, "lazy").parse_args(["lazy", "--flag"])
    assert args.handler(args) == 5
    assert "hookagent_lazy_cmd" in sys.modules


def test_a_command_module_that_cannot_be_found_is_refused_at_registration(pm) -> None:  # type: ignore[no-untyped-def]
    plugin = types.ModuleType("hookagent_typo_plugin")

    @hookimpl(optionalhook=True)
    def hookagent_register_cli_commands(register):  # type: ignore[no-untyped-def]
        register("typo", help="x", module="hookagent_no_such_cli_module")

    plugin.hookagent_register_cli_commands = hookagent_register_cli_commands  # type: ignore[attr-defined]
    pm.register(plugin, name="typo-plugin")
    with pytest.raises(HookContractError, match="'typo' names module 'hookagent_no_such"):
        collect_commands(pm)


def test_no_top_level_option_takes_a_value(pm) -> None:  # type: ignore[no-untyped-def]
    """``main`` finds the command as the first word not starting with "-": true only while
    no top-level option takes a value."""
    parser = build_parser(collect_commands(pm), "")
    for action in parser._actions:
        if action.option_strings:
            assert action.nargs == 0, action.option_strings


def test_module_and_callables_together_are_refused(pm) -> None:  # type: ignore[no-untyped-def]
    plugin = types.ModuleType("hookagent_both_plugin")

    @hookimpl(optionalhook=True)
    def hookagent_register_cli_commands(register):  # type: ignore[no-untyped-def]
        register("both", help="x", module="m", run=lambda args: 0)

    plugin.hookagent_register_cli_commands = hookagent_register_cli_commands  # type: ignore[attr-defined]
    pm.register(plugin, name="both-plugin")
    with pytest.raises(HookContractError, match="'both' takes module"):
        collect_commands(pm)
