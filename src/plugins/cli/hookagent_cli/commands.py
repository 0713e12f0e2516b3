"""The registry of subcommands that ``hookagent_register_cli_commands`` fills."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import attrs
from hookagent.errors import HookContractError


@attrs.frozen
class Deferred:
    """``module.attr``, imported when first called: a command registered with ``module=``
    costs nothing until it is the one that runs (or its ``--help`` is asked for)."""

    module: str
    attr: str

    def __call__(self, *args: Any) -> Any:
        found = getattr(importlib.import_module(self.module), self.attr, None)
        if not callable(found):
            raise HookContractError(
                f"CLI command module {self.module!r} has no callable {self.attr!r}"
            )
        return found(*args)


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
        configure: Callable[[argparse.ArgumentParser], None] | None = None,
        run: Callable[[argparse.Namespace], int] | None = None,
        common: bool = True,
        module: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.replace("-", "").isalnum():
            raise HookContractError(f"plugin {self.plugin!r}: bad CLI command name {name!r}")
        if module is not None:
            if configure is not None or run is not None or not isinstance(module, str):
                raise HookContractError(
                    f"plugin {self.plugin!r}: command {name!r} takes module (a module name "
                    "with configure and run) or the callables configure and run, not both"
                )
            try:  # the plugin's package is imported already: this reads no command code
                spec = importlib.util.find_spec(module)
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                raise HookContractError(
                    f"plugin {self.plugin!r}: command {name!r} names module {module!r}, "
                    "which cannot be found"
                )
            configure, run = Deferred(module, "configure"), Deferred(module, "run")
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
