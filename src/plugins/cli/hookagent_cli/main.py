"""``hookagent``: argument parsing, subcommand dispatch and the one-line error convention.

Errors print ``hookagent: error: <TypeName>: message`` on stderr and exit 1 (2 for usage
errors); ``--traceback`` adds the traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from .commands import CommandRegistry
from .options import add_common


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"hookagent: error: usage: {message} (see '{self.prog} --help')\n")


def build_parser(registry: CommandRegistry, only: str | None = None) -> Parser:
    """The parser; with ``only``, only that command's arguments are configured (the others
    are listed, by name and help): ``configure`` may import its command's implementation,
    which a process running another command (or ``--help``) has no use for."""
    parser = Parser(
        prog="hookagent",
        description="Run and inspect hookagent agents. Try: hookagent demo",
    )
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("hookagent-cli")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        ver = "unknown"
    parser.add_argument("--version", action="version", version=f"hookagent-cli {ver}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in sorted(registry.commands):
        command = registry.commands[name]
        p = sub.add_parser(name, help=command.help, description=command.help)
        if only is None or name == only:
            command.configure(p)
            if command.common:
                add_common(p)
        p.set_defaults(handler=command.run)
    return parser


def collect_commands(pm: Any) -> CommandRegistry:
    """Ask every plugin for its commands, through pluggy (so hook monitors see each call).

    Each plugin is called through a subset caller holding only its own implementation, so
    the registry knows which plugin registered what and a clash can name both.
    """
    registry = CommandRegistry()
    name = "hookagent_register_cli_commands"
    impls = list(reversed(getattr(pm.hook, name).get_hookimpls()))  # pluggy call order
    plugins = [impl.plugin for impl in impls]
    for impl in impls:
        registry.plugin = impl.plugin_name
        others = [p for p in plugins if p is not impl.plugin]
        pm.subset_hook_caller(name, remove_plugins=others)(register=registry)
    return registry


def _root_cause(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in argv
    try:
        from .pm import cli_plugin_manager

        pm = cli_plugin_manager(strict=False if argv[:1] == ["plugins"] else None)
        registry = collect_commands(pm)
        # the command: the first word that is not an option (no top-level option takes a
        # value: a test pins it)
        only = next((a for a in argv if not a.startswith("-")), "")
        args = build_parser(registry, only).parse_args(argv)
        args.plugin_manager = pm
        args.commands = list(registry.commands)
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("hookagent: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        cause = _root_cause(exc)
        if show_traceback:
            traceback.print_exception(cause)
        message = " ".join(str(cause).split()) or "(no message)"
        print(f"hookagent: error: {type(cause).__name__}: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
