"""The hook implementations; the ``example-tools`` entry point names this module.

Registering the module registers the tools and the audit middleware with default settings.
``ExampleTools(max_output_chars=...)`` is the same plugin with another output cap, for
``AgentConfig(plugins=[ExampleTools(...)], autoload_plugins=False)`` (do not register both:
the tool names would clash, which hookagent reports as ``ToolDefinitionError``).
"""

from __future__ import annotations

from hookagent import ToolRegister, hookimpl

from .audit import DEFAULT_MAX_OUTPUT_CHARS, AuditMiddleware
from .calculator import calculator
from .session import conversation_stats
from .text import word_count
from .units import convert_units


def register_tools(register: ToolRegister) -> None:
    """One ``register(func, *, name=None, description=None, group=None)`` call per tool."""
    register(calculator, group="math")
    register(convert_units, group="math")
    register(word_count, group="text")
    register(conversation_stats, group="session")


@hookimpl
def hookagent_register_tools(register: ToolRegister) -> None:
    register_tools(register)


@hookimpl
def hookagent_wrap_tool_call() -> AuditMiddleware:
    return AuditMiddleware(max_output_chars=DEFAULT_MAX_OUTPUT_CHARS)


class ExampleTools:
    """The same plugin as an object, so that the output cap can be configured."""

    def __init__(self, *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> None:
        self.middleware = AuditMiddleware(max_output_chars=max_output_chars)

    @hookimpl
    def hookagent_register_tools(self, register: ToolRegister) -> None:
        register_tools(register)

    @hookimpl
    def hookagent_wrap_tool_call(self) -> AuditMiddleware:
        return self.middleware
