"""What a configuration prepares once and every agent built from it shares.

The plugin manager, the tools and the tool-middleware chain, the model, the bound store, the
session gate and the run registry are made on the first ``build()`` and reused, so that
building an agent per request costs microseconds.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import attrs

from .errors import (
    AgentError,
    ConfigurationError,
    ModelError,
    StoreConfigurationError,
    ToolDefinitionError,
)
from .gates import LocalSessionGate, SessionGate
from .models import Model, ToolSpec
from .plugins import create_plugin_manager
from .registry import check_locality
from .relay import HookRelay
from .runs import AgentRunRegistry
from .store.base import AgentStateStore
from .store.memory import InMemoryAgentStateStore
from .store.open import store_factory, store_registration
from .tokens import TokenCounter, count_messages, estimate_tokens
from .tools import Tool, ToolCall

log = logging.getLogger("hookagent.kernel")

if TYPE_CHECKING:
    from .config import AgentConfig
    from .context import RuntimeContext
    from .messages import Msg
    from .workspace import Workspace

__all__ = ["Kernel", "StateNotPersistedWarning", "ToolCall"]


class StateNotPersistedWarning(UserWarning):
    """No store plugin provides a default: state lives in memory and is lost on exit."""


class Kernel:
    """The shared runtime of one ``AgentConfig``."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        # anyio imports its event-loop backend on first use (tens of milliseconds): pay that
        # when a configuration is prepared, not inside some process's first call
        with contextlib.suppress(ImportError):
            importlib.import_module("anyio._backends._asyncio")
        if config.plugin_manager is not None:
            self.pm = config.plugin_manager
            for plugin in config.plugins:
                if not self.pm.is_registered(plugin):
                    self.pm.register(plugin)
            self.pm.check_pending()
        else:
            self.pm = create_plugin_manager(
                config.plugins, autoload=config.autoload_plugins, strict=config.strict_plugins
            )
        self.relay = HookRelay(self.pm)
        from .agent import Agent  # agent imports kernel

        self.agent_type = Agent
        """What ``AgentConfig.build()`` makes (resolved once, not imported per build)."""
        self.tools = self._collect_tools()
        self._enabled: dict[frozenset[str], tuple[dict[str, Tool], list[ToolSpec]]] = {}
        self.tool_middlewares = self.relay.tool_middlewares()
        self.model_middlewares = self.relay.model_middlewares()
        self.model: Model | None = self._resolve_model()
        self.gate: SessionGate = config.session_gate or LocalSessionGate()
        self.registry = config.run_registry or AgentRunRegistry()
        self._store: AgentStateStore | None = None
        self._store_pending: Awaitable[AgentStateStore] | None = None
        self._store_reopen: Callable[[], Any] | None = None
        self._store_ready: anyio.Event | None = None
        self._owns_store = False
        if config.state_store is None and config.session_log is None:
            self._bind_store()  # the default store is an object: nothing opens yet
        self.store_locality = self._locality()
        counter = self.relay.token_counter()
        self.token_counter: TokenCounter = counter or estimate_tokens
        self.relay.configure(config, self)  # a plugin refuses here, before a store opens
        if config.session_log is not None:
            self._bind_authority()
        self._bind_store()
        self._portal_lock = threading.Lock()
        self._portal: anyio.from_thread.BlockingPortal | None = None

    # ---- tools and models
    def _collect_tools(self) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        owners: dict[str, str] = {}

        def add(tool: Tool, owner: str) -> None:
            if tool.name in tools:
                raise ToolDefinitionError(
                    f"tool {tool.name!r} is registered twice: by {owners[tool.name]} and by {owner}"
                )
            tools[tool.name] = tool
            owners[tool.name] = owner

        for item in self.config.tools:
            tool = Tool.from_function(item)
            add(attrs.evolve(tool, group=None), "the configuration")

        class _ToolRegistrar:
            """The ``register`` a ``hookagent_register_tools`` implementation gets."""

            def __init__(self, _what: str, _sink: dict[str, Any], plugin: str) -> None:
                self.plugin = plugin

            def __call__(
                self,
                func: Callable[..., Any],
                *,
                name: str | None = None,
                description: str | None = None,
                group: str | None = None,
                read_only: bool | None = None,
                concurrency_safe: bool | None = None,
                timeout: float | None = None,
            ) -> None:
                tool = Tool.from_function(
                    func,
                    name=name,
                    description=description,
                    group=group or self.plugin,
                    read_only=read_only,
                    concurrency_safe=concurrency_safe,
                    timeout=timeout,
                )
                add(tool, f"plugin {self.plugin!r}")

        self.relay.collect("hookagent_register_tools", "tool", _ToolRegistrar)
        return tools

    def enabled_tools(
        self, activated: Sequence[str] = ()
    ) -> tuple[dict[str, Tool], list[ToolSpec]]:
        """The tools one call may use: the configuration's own, plus the plugin tool groups
        enabled by ``tool_groups`` or activated in the session's ``tool_context``.

        Installing a tool plugin never hands its tools to an agent that did not ask for them.
        """
        key = frozenset(activated)
        found = self._enabled.get(key)
        if found is None:
            groups = set(self.config.tool_groups) | key
            every = "*" in groups
            tools = {
                n: t for n, t in self.tools.items() if t.group is None or every or t.group in groups
            }
            found = self._enabled[key] = (tools, [t.spec for t in tools.values()])
        return found

    def model_factories(self) -> dict[str, tuple[Any, str]]:
        return self.relay.collect("hookagent_register_models", "model")

    def _resolve_model(self) -> Model | None:
        model = self.config.model
        if model is None or not isinstance(model, str):
            return model
        factories = self.model_factories()
        if model not in factories:
            known = ", ".join(sorted(factories)) or "none (install a model plugin)"
            raise ModelError(f"no model provider named {model!r}; registered: {known}")
        return factories[model][0](**self.config.model_options)  # type: ignore[no-any-return]

    # ---- what plugins share: tokens, the model's window, the workspace
    def count_tokens(self, messages: Iterable[Msg], system: str | None = None) -> int:
        """Tokens of ``messages`` (and a system prompt) under the configuration's counter."""
        return count_messages(messages, self.token_counter, system)

    @property
    def context_window(self) -> int | None:
        """The model's declared context window in tokens (``model.context_window``), or None."""
        window = getattr(self.model, "context_window", None)
        return window if type(window) is int and window > 0 else None

    def workspace(self, ctx: RuntimeContext) -> Workspace | None:
        """The workspace of ``ctx``'s slot, from ``hookagent_workspace``; None without one."""
        return self.relay.workspace(ctx, self)

    # ---- the store
    def _locality(self) -> str:
        """Who sees the configured store's slots, known before it opens (see
        ``hookagent.registry.LOCALITIES``); a store that does not say counts as shared."""
        spec = self.config.state_store
        if isinstance(spec, str):
            return store_registration(self.pm, spec)[2]
        if spec is None:
            spec = self._store
        return check_locality(getattr(spec, "locality", "shared"), f"store {spec!r}")

    def _bind_authority(self) -> None:
        """``session_log`` set: the store a plugin provides for it is the only one used."""
        authority = self.relay.state_authority(self.config, self)
        if authority is None:
            raise ConfigurationError(
                f"agent {self.config.id!r}: session_log={self.config.session_log!r} needs the "
                "session-log plugin (pip install hookagent-session-log), which is not loaded"
            )
        self._store = self._store_pending = None
        self._set_store(authority)
        self._owns_store = True
        self.store_locality = check_locality(
            getattr(authority, "locality", "shared"), f"session log store {authority!r}"
        )

    def _bind_store(self) -> None:
        if self._store is not None or self._store_pending is not None:
            return
        spec = self.config.state_store
        if spec is None:
            default = self.relay.default_state_store(self.config.id)
            if default is None:
                warnings.warn(
                    f"agent {self.config.id!r}: no state store configured and no store plugin "
                    "provides a default; state is kept in memory and lost on exit",
                    StateNotPersistedWarning,
                    stacklevel=4,
                )
                default = InMemoryAgentStateStore()
            self._set_store(default)
        elif isinstance(spec, str):
            factory, _ = store_factory(self.pm, spec)  # the URL rules of open_store
            options = self.config.state_store_options
            self._set_store(factory(spec, **options))
            if self._store_pending is not None:  # an awaitable can be awaited once only
                self._store_reopen = lambda: factory(spec, **options)
        else:
            self._set_store(spec)
            return
        self._owns_store = True

    def _set_store(self, value: Any) -> None:
        if inspect.isawaitable(value):
            self._store_pending = value
        else:
            self._store = value

    async def store(self) -> AgentStateStore:
        """The bound store; the first caller awaits an opening factory's result.

        If that await fails or is cancelled (a caller's timeout while the database does not
        answer), the factory is asked for a new opening, which the next caller awaits: one
        impatient caller must not leave the configuration without a store for good.
        """
        while self._store is None:
            if self._store_pending is not None:
                pending, self._store_pending = self._store_pending, None
                ready = self._store_ready = anyio.Event()
                try:
                    self._store = await pending
                except BaseException:
                    self._rearm_store()
                    raise
                finally:
                    ready.set()
            elif self._store_ready is not None and not self._store_ready.is_set():
                await self._store_ready.wait()
            else:
                raise StoreConfigurationError(
                    "the state store failed to open (see the first error)"
                )
        return self._store

    def _rearm_store(self) -> None:
        if self._store_reopen is None:
            return
        try:
            self._set_store(self._store_reopen())
        except Exception:  # the next caller gets "failed to open"; this caller its own error
            log.exception("asking the store factory for a new opening failed")

    # ---- sync twins run on one event-loop thread per kernel
    def portal(self) -> anyio.from_thread.BlockingPortal:
        if _in_event_loop():
            raise AgentError("a *_sync method was called inside an event loop: await the async one")
        with self._portal_lock:
            if self._portal is None:
                self._portal = _start_daemon_portal()
            return self._portal

    async def aclose(self) -> None:
        closer = getattr(self._store, "aclose", None)
        if self._owns_store and closer is not None:
            await closer()
        model_closer = getattr(self.model, "aclose", None)
        if isinstance(self.config.model, str) and model_closer is not None:
            await model_closer()

    def close_portal(self) -> None:
        with self._portal_lock:
            if self._portal is not None:
                self._portal.call(self._portal.stop)
                self._portal = None


def _in_event_loop() -> bool:
    try:
        anyio.get_current_task()
    except Exception:
        return False
    return True


def _start_daemon_portal() -> anyio.from_thread.BlockingPortal:
    """An event loop on a daemon thread for the *_sync twins.

    anyio's ``start_blocking_portal`` runs on a non-daemon worker, which would keep a script
    that never closed its agent from exiting.
    """
    ready = threading.Event()
    holder: list[anyio.from_thread.BlockingPortal] = []

    async def main() -> None:
        async with anyio.from_thread.BlockingPortal() as portal:
            holder.append(portal)
            ready.set()
            await portal.sleep_until_stopped()

    threading.Thread(target=anyio.run, args=(main,), name="hookagent-sync", daemon=True).start()
    ready.wait()
    return holder[0]
