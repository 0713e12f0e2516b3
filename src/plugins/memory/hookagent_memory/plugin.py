"""The ``memory`` plugin: this module is the entry point; ``MemoryPlugin(...)`` is the same
plugin with options (and a clock) of its own, registered as ``memory``.

A model middleware at order 100 (outside compaction, task projection and the plan-mode
banner) appends the workspace files to the system prompt of each reasoning request; the
request it was given is never changed (``request.evolve``), and nothing it adds reaches the
durable history, which holds messages, never the system prompt.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from hookagent import REASONING, Agent
from hookagent.config import AgentConfig
from hookagent.context import RuntimeContext
from hookagent.hookspecs import hookimpl
from hookagent.kernel import Kernel
from hookagent.models import ModelRequest, ModelResponse
from hookagent.registry import ToolRegister
from hookagent.relay import Middleware

from .errors import MemoryOptionsError
from .options import MemorySettings, parse_options
from .section import SectionCache
from .tools import Clock, MemoryTools, utc_now

NAME = "memory"
GROUP = "memory"
MODEL_ORDER = 100
"""Outermost of the request shapers: the files are in the prompt compaction measures."""


class MemoryPlugin:
    """Workspace files into every reasoning request, and the two memory tools.

    ``options`` are ``plugin_options["memory"]``'s keys; a configuration's own
    ``plugin_options["memory"]`` wins key by key. ``clock`` dates the notes (UTC now).
    """

    def __init__(self, *, clock: Clock = utc_now, **options: Any) -> None:
        self.__name__ = NAME
        self.options = dict(options)
        # an instance the application made and passed in plugins=[...] is asked for; the
        # entry point's instance works only for configurations that name it in plugin_options
        self.always_on = True
        self._on: weakref.WeakKeyDictionary[Kernel, bool] = weakref.WeakKeyDictionary()
        self.cache = SectionCache()
        self.tools = MemoryTools(self.settings_for, clock)
        self._settings: weakref.WeakKeyDictionary[Kernel, MemorySettings] = (
            weakref.WeakKeyDictionary()
        )
        self._defaults = MemorySettings()
        self.middleware = Middleware(self.shape, order=MODEL_ORDER)

    def configure(self, config: AgentConfig, kernel: Kernel) -> MemorySettings:
        given = config.plugin_options.get(NAME, {})
        if not isinstance(given, Mapping):
            raise MemoryOptionsError(
                f'plugin_options["memory"] must be a mapping, got {type(given).__name__}'
            )
        settings = parse_options({**self.options, **given})
        self._settings[kernel] = settings
        self._on[kernel] = self.always_on or NAME in config.plugin_options
        return settings

    def settings(self, kernel: Kernel) -> MemorySettings:
        return self._settings.get(kernel, self._defaults)

    def settings_for(self, ctx: RuntimeContext) -> MemorySettings:
        agent = ctx.get(Agent)
        return self._defaults if agent is None else self.settings(agent.kernel)

    async def section(self, ctx: RuntimeContext, kernel: Kernel) -> str:
        """The section ``ctx``'s next request gets ("" without a workspace or files)."""
        ws = kernel.workspace(ctx)
        if ws is None:
            return ""
        return await self.cache.section(ws, self.settings(kernel), kernel.token_counter)

    async def shape(
        self, request: ModelRequest, ctx: RuntimeContext, call_next: Any
    ) -> ModelResponse:
        """The model middleware: a new request with the section after the system prompt."""
        agent = ctx.get(Agent)
        if request.purpose != REASONING or agent is None or not self._on.get(agent.kernel):
            return await call_next(request)  # type: ignore[no-any-return]
        section = await self.section(ctx, agent.kernel)
        if not section:
            return await call_next(request)  # type: ignore[no-any-return]
        system = f"{request.system}\n\n{section}" if request.system else section
        return await call_next(request.evolve(system=system))  # type: ignore[no-any-return]

    # ---- hooks
    @hookimpl
    def hookagent_configure(self, config: AgentConfig, kernel: Kernel) -> None:
        self.configure(config, kernel)

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        return self.middleware

    @hookimpl
    def hookagent_register_tools(self, register: ToolRegister) -> None:
        for func, read_only in self.tools.registrations():
            register(func, group=GROUP, read_only=read_only, concurrency_safe=read_only)


_default = MemoryPlugin()
"""The entry point's instance: options from ``plugin_options["memory"]`` only, and on only
for configurations that name it there (``{"memory": {}}``: the defaults): installing the
plugin changes no other agent's requests."""
_default.always_on = False


def default_plugin() -> MemoryPlugin:
    return _default


@hookimpl
def hookagent_configure(config: AgentConfig, kernel: Kernel) -> None:
    _default.configure(config, kernel)


@hookimpl
def hookagent_wrap_model_call() -> Middleware:
    return _default.middleware


@hookimpl
def hookagent_register_tools(register: ToolRegister) -> None:
    _default.hookagent_register_tools(register)
