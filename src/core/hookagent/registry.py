"""Collecting what plugins register (tools, models, store schemes) with clear errors.

Each ``hookagent_register_*`` implementation is called with its own ``Registrar`` so that a
duplicate or a wrong type names the plugin that registered it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import pluggy

from .errors import HookContractError

if TYPE_CHECKING:
    from .models import Model
    from .store.base import AgentStateStore

V = TypeVar("V")


class ToolRegister(Protocol):
    """``register`` of ``hookagent_register_tools``: annotate your implementation with it."""

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
    ) -> None: ...


class ModelRegister(Protocol):
    """``register`` of ``hookagent_register_models``: ``register(name, factory)``."""

    def __call__(self, name: str, factory: Callable[..., Model]) -> None: ...


LOCALITIES = ("process", "host", "shared")
"""Who sees a store's slots: this process only, this host, or every host that connects."""


class StoreRegister(Protocol):
    """``register`` of ``hookagent_register_state_stores``: ``register(scheme, factory,
    locality="shared")``; the factory may return the store or an awaitable of it.
    ``locality`` is one of ``LOCALITIES`` (``kernel.store_locality`` for the scheme)."""

    def __call__(
        self,
        scheme: str,
        factory: Callable[..., AgentStateStore | Awaitable[AgentStateStore]],
        *,
        locality: str = "shared",
    ) -> None: ...


class SessionLogRegister(Protocol):
    """``register`` of ``hookagent_register_session_logs``: ``register(scheme, factory,
    locality="shared")``; ``factory(url, **options)`` returns a
    ``hookagent.sessionlog.SessionLog`` or an awaitable of one."""

    def __call__(
        self, scheme: str, factory: Callable[..., Any], *, locality: str = "shared"
    ) -> None: ...


def check_locality(value: object, where: str) -> str:
    if value not in LOCALITIES:
        raise HookContractError(f"{where}: locality {value!r} is not one of {LOCALITIES}")
    return str(value)


class Registrar(Generic[V]):
    """The ``register`` callback handed to a registration hook."""

    def __init__(self, what: str, sink: dict[str, tuple[V, str]], plugin: str) -> None:
        self._what, self._sink, self._plugin = what, sink, plugin

    def add(self, name: str, value: V) -> None:
        if not isinstance(name, str) or not name:
            raise HookContractError(
                f"plugin {self._plugin!r} registered a {self._what} with name {name!r}: "
                "names are non-empty strings",
                plugin=self._plugin,
            )
        if name in self._sink:
            _, other = self._sink[name]
            raise HookContractError(
                f"{self._what} {name!r} is registered twice: by {other!r} and by {self._plugin!r}",
                plugin=self._plugin,
            )
        self._sink[name] = (value, self._plugin)

    def __call__(self, name: str, value: V) -> None:
        if not callable(value):
            raise HookContractError(
                f"plugin {self._plugin!r} registered {self._what} {name!r} with a "
                f"{type(value).__name__}, expected a callable factory",
                plugin=self._plugin,
            )
        self.add(name, value)


def collect(
    pm: pluggy.PluginManager,
    hook_name: str,
    what: str,
    make: Callable[[str, dict[str, tuple[Any, str]], str], Any] = Registrar,
) -> dict[str, tuple[Any, str]]:
    """Call every implementation of a registration hook with its own registrar."""
    if make is Registrar and hook_name == "hookagent_register_state_stores":
        localities: dict[str, str] = {}  # store schemes: register(..., locality=) is allowed

        def make(what: str, sink: dict[str, tuple[Any, str]], plugin: str) -> Any:
            return StoreRegistrar(what, sink, plugin, localities)

    sink: dict[str, tuple[Any, str]] = {}
    hook = getattr(pm.hook, hook_name)
    impls = list(reversed(hook.get_hookimpls()))  # registration order: first registered first
    for impl in impls:
        register = make(what, sink, impl.plugin_name)
        # one implementation at a time, through pluggy, so hook monitoring (tracing, the
        # test recorder) sees registration calls too
        others = [i.plugin for i in impls if i is not impl]
        pm.subset_hook_caller(hook_name, remove_plugins=others)(register=register)
    return sink


class StoreRegistrar(Registrar[Any]):
    """``register(scheme, factory, locality=...)``: records each scheme's locality too."""

    def __init__(
        self, what: str, sink: dict[str, tuple[Any, str]], plugin: str, localities: dict[str, str]
    ) -> None:
        super().__init__(what, sink, plugin)
        self._localities = localities

    def __call__(self, name: str, value: Any, *, locality: str = "shared") -> None:
        check_locality(locality, f"plugin {self._plugin!r}, scheme {name!r}")
        super().__call__(name, value)
        self._localities[name] = locality


def collect_stores(pm: pluggy.PluginManager) -> dict[str, tuple[Any, str, str]]:
    """scheme → (factory, plugin name, locality), from ``hookagent_register_state_stores``."""
    localities: dict[str, str] = {}

    def make(what: str, sink: dict[str, tuple[Any, str]], plugin: str) -> StoreRegistrar:
        return StoreRegistrar(what, sink, plugin, localities)

    found = collect(pm, "hookagent_register_state_stores", "state store scheme", make)
    return {k: (f, p, localities.get(k, "shared")) for k, (f, p) in found.items()}
