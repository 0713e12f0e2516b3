"""The hook the CLI emits so that any plugin can add a ``hookagent <command>``.

Implement it with ``@hookimpl(optionalhook=True)``: the specification is added only where the
CLI runs (through ``hookagent_add_hookspecs``), so an agent's plugin manager must not insist on
it.
"""

from __future__ import annotations

from typing import Any

from hookagent.hookspecs import hookspec


@hookspec
def hookagent_register_cli_commands(register: Any) -> None:
    """Add subcommands to ``hookagent``.

    :param register: ``register(name, *, help, configure, run, common=True)``:
        ``configure(parser)`` adds the command's arguments to its ``argparse`` parser,
        ``run(args) -> int`` executes it and returns the exit code. With ``common=True`` the
        parser also gets the shared options (``--store``, ``--model``, ``--user``, ...; see
        ``hookagent_cli.options``). ``register(name, *, help, module, common=True)`` names a
        module defining ``configure`` and ``run`` instead, imported only when its command
        is the one given (not for ``hookagent --help`` or another command).

    Result: ignored. A name registered twice is an error naming both plugins.
    """


@hookspec
def hookagent_register_cli_presets(register: Any) -> None:
    """Add configuration presets, chosen with ``hookagent <command> --preset NAME``.

    :param register: ``register(name, apply, *, help)``: ``apply(settings) -> settings``
        takes the ``AgentConfig`` keywords the command line built (model, tools, store,
        plugins, ...) and returns the keywords to build the configuration with (add
        ``plugin_options`` and ``tool_groups``, keep the rest).

    Result: ignored. A name registered twice is an error naming both plugins.
    """
