"""The registry of subcommands that ``hookagent_register_cli_commands`` fills."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import attrs
from hookagent.errors import HookContractError


@attrs.frozen
class Command:
    """One ``hookagent <name>`` subcommand."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    common: bool = True
    plugin: str = ""


class CommandRegistry:
    """Collects commands, naming the plugin of each so a clash says who clashed."""

    def __init__(self) -> None:
        self.commands: dict[str, Command] = {}
        self.plugin = ""

    def __call__(
        self,
        name: str,
        *,
        help: str,
        configure: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
        common: bool = True,
    ) -> None:
        if not isinstance(name, str) or not name.replace("-", "").isalnum():
            raise HookContractError(f"plugin {self.plugin!r}: bad CLI command name {name!r}")
        if not callable(configure) or not callable(run):
            raise HookContractError(
                f"plugin {self.plugin!r}: command {name!r} needs callables configure and run"
            )
        if name in self.commands:
            other = self.commands[name].plugin
            raise HookContractError(
                f"CLI command {name!r} is registered twice: by {other!r} and by {self.plugin!r}"
            )
        self.commands[name] = Command(name, help, configure, run, common, self.plugin)
