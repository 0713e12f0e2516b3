"""The ``hookagent`` command line. Plugins add subcommands with ``hookagent_register_cli_commands``."""

from .commands import Command, CommandRegistry
from .errors import SessionNotFound

__all__ = ["Command", "CommandRegistry", "SessionNotFound"]
