"""The harness distribution's plugin: ``--preset harness`` and ``hookagent harness-demo``.

It acts on no agent: both hooks are the CLI's (``optionalhook``), so a configuration that
loads this entry point is unchanged; the preset is applied only where it is asked for.
"""

from __future__ import annotations

from typing import Any

from hookagent.hookspecs import hookimpl

from .preset import harness_settings


def apply_preset(settings: dict[str, Any]) -> dict[str, Any]:
    """The command line's configuration keywords with the harness preset on (no
    ``--session-log``: the preset's default log, ``default_session_log``)."""
    settings = dict(settings)
    if settings.get("session_log") is None:
        settings.pop("session_log", None)
    return harness_settings(**settings)


@hookimpl(optionalhook=True)
def hookagent_register_cli_presets(register: Any) -> None:
    register(
        "harness",
        apply_preset,
        help="the harness plugins with the reference's defaults (hookagent_harness.harness_config)",
    )


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    register(
        "harness-demo",
        help="the harness preset's offline demo: todos across processes, a permission "
        "question, plan mode, MEMORY.md, compaction, an interrupt and a resume",
        module=f"{__package__}.demo",  # imported when the command runs
    )
