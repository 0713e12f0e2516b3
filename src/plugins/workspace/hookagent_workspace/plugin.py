"""The ``workspace`` plugin: this module is the entry point; ``WorkspacePlugin(...)`` is the
same plugin with options of its own (registered as ``workspace``, so the entry point steps
aside).

Per configuration (``hookagent_configure``) the options are checked and the filesystem is
opened once; a workspace other hosts see with a state store only this process or host sees
is refused there. Per call, ``hookagent_workspace(ctx, kernel)`` maps the call's
(user_id, session_id) to its scope directory: a small object, no filesystem access.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from hookagent import Agent
from hookagent.config import AgentConfig
from hookagent.context import RuntimeContext
from hookagent.hookspecs import hookimpl
from hookagent.kernel import Kernel
from hookagent.registry import ToolRegister

from .errors import WorkspaceOptionsError
from .options import WorkspaceSettings, parse_options, redact
from .scope import scope_names
from .tools import FileTools
from .workspace import FsWorkspace

NAME = "workspace"
GROUP = "workspace"
LOCAL_LOCALITIES = ("process", "host")


def _store_name(config: AgentConfig) -> str:
    spec = config.state_store
    if spec is None:
        return "the default state store"
    if isinstance(spec, str):
        return f"state store {redact(spec)!r}"
    return f"state store {type(spec).__name__}"


class WorkspacePlugin:
    """The workspace and the file tools, for every configuration it is registered in.

    ``options`` are ``plugin_options["workspace"]``'s keys (``url``, ``scope``, limits...);
    a configuration's own ``plugin_options["workspace"]`` wins key by key.
    """

    def __init__(self, **options: Any) -> None:
        self.__name__ = NAME
        self.options = dict(options)
        self._settings: weakref.WeakKeyDictionary[Kernel, WorkspaceSettings] = (
            weakref.WeakKeyDictionary()
        )
        self.tools = FileTools(self.resolve)

    # ---- per configuration
    def configure(self, config: AgentConfig, kernel: Kernel) -> WorkspaceSettings:
        """Check the options and the store's locality; remember the settings."""
        given = config.plugin_options.get(NAME, {})
        if not isinstance(given, Mapping):
            raise WorkspaceOptionsError(
                f'plugin_options["workspace"] must be a mapping, got {type(given).__name__}'
            )
        settings = parse_options({**self.options, **given}, config.id)
        if settings.shared and kernel.store_locality in LOCAL_LOCALITIES:
            where = "this process" if kernel.store_locality == "process" else "this host"
            raise WorkspaceOptionsError(
                f"workspace {redact(settings.backend.url)!r} is on a filesystem other hosts "
                f"share, but {_store_name(config)} keeps state for {where} only "
                f"(store_locality={kernel.store_locality!r}): replicas would share files but "
                "not sessions. Use a shared store (Redis, PostgreSQL, MariaDB, or JSON files "
                "on a remote fsspec filesystem), or a local workspace"
            )
        self._settings[kernel] = settings
        return settings

    def settings(self, kernel: Kernel) -> WorkspaceSettings | None:
        return self._settings.get(kernel)

    # ---- per call
    def workspace(self, ctx: RuntimeContext, kernel: Kernel) -> FsWorkspace | None:
        """The scope directory of ``ctx``'s (user_id, session_id) in ``kernel``'s workspace."""
        settings = self._settings.get(kernel)
        if settings is None:
            return None  # registered after the configuration was prepared: not ours
        state = ctx.agent_state
        session = state.session_id if state is not None else ctx.session_id
        names = scope_names(
            settings.scope, ctx.user_id, session or kernel.config.default_session_id
        )
        return FsWorkspace(settings.backend, names, settings.limits)

    def resolve(self, ctx: RuntimeContext) -> FsWorkspace | None:
        """The workspace of the call running ``ctx`` (what the file tools use)."""
        agent = ctx.get(Agent)
        return None if agent is None else self.workspace(ctx, agent.kernel)

    # ---- hooks
    @hookimpl
    def hookagent_configure(self, config: AgentConfig, kernel: Kernel) -> None:
        self.configure(config, kernel)

    @hookimpl
    def hookagent_workspace(self, ctx: RuntimeContext, kernel: Kernel) -> FsWorkspace | None:
        return self.workspace(ctx, kernel)

    @hookimpl
    def hookagent_register_tools(self, register: ToolRegister) -> None:
        for func, read_only in self.tools.registrations():
            register(func, group=GROUP, read_only=read_only, concurrency_safe=read_only)


_default = WorkspacePlugin()
"""The entry point's instance: options from ``plugin_options["workspace"]`` only."""


def default_plugin() -> WorkspacePlugin:
    return _default


@hookimpl
def hookagent_configure(config: AgentConfig, kernel: Kernel) -> None:
    _default.configure(config, kernel)


@hookimpl
def hookagent_workspace(ctx: RuntimeContext, kernel: Kernel) -> FsWorkspace | None:
    return _default.workspace(ctx, kernel)


@hookimpl
def hookagent_register_tools(register: ToolRegister) -> None:
    _default.hookagent_register_tools(register)
