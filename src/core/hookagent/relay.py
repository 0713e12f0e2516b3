"""The kernel's one typed caller of hooks: the only place where hook names are strings.

Every call goes through pluggy, so monitors (``HookRecorder``, ``HOOKAGENT_TRACE_HOOKS``) see
each of them, run events included; only a per-call hook that no plugin implements is skipped
while no monitor watches. The relay awaits what "may be async" hooks return (pluggy
does not), checks the results and names hook and plugin in every contract error.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs
import pluggy

from ._done import DONE
from .errors import HookContractError

if TYPE_CHECKING:
    from .config import AgentConfig
    from .context import RuntimeContext
    from .events import RunEvent
    from .kernel import Kernel
    from .models import ModelRequest, ModelResponse
    from .state import AgentState
    from .store.base import AgentStateStore
    from .tokens import TokenCounter
    from .workspace import Workspace

_events_log = logging.getLogger("hookagent.events")

_PER_CALL_HOOKS = (
    "hookagent_state_loaded",
    "hookagent_build_model_request",
    "hookagent_before_persist",
    "hookagent_after_persist",
)
"""The hooks every agent call makes; one that nobody implements is not called at all."""

ToolMiddleware: TypeAlias = Callable[..., Awaitable[Any]]
ModelMiddleware: TypeAlias = Callable[..., Awaitable["ModelResponse"]]


@attrs.frozen
class Middleware:
    """A middleware with a declared place in its chain: lower ``order`` is outer.

    A middleware hook may return a bare async callable (``order`` 0) or one of these.
    Ties are broken by plugin name, so the chain never depends on registration order
    (explicit plugins against entry points, or the order entry points are found in).
    """

    func: Callable[..., Awaitable[Any]]
    order: int = 0

    def __attrs_post_init__(self) -> None:
        if not callable(self.func):
            raise HookContractError(f"Middleware.func must be callable, got {self.func!r}")
        if type(self.order) is not int:
            raise HookContractError(f"Middleware.order must be an int, got {self.order!r}")


def _plugin_of(result: Any, impls: Sequence[Any]) -> str | None:
    code = getattr(result, "cr_code", None)
    for impl in impls:
        if code is not None and getattr(impl.function, "__code__", None) is code:
            return str(impl.plugin_name)
    return impls[0].plugin_name if len(impls) == 1 else None


class HookRelay:
    """Typed methods for every kernel hook, over one plugin manager."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._hook = pm.hook
        self._observers: tuple[int | None, list[Any]] = (-1, [])
        self._idle: tuple[int | None, frozenset[str]] = (-1, frozenset())

    def _reaches_nobody(self, name: str) -> bool:
        """True when calling the per-call hook ``name`` would reach no implementation and
        no monitor sees hook calls: the call is skipped (about five per agent call).

        Cached until a plugin is (un)registered or a monitor added or removed; a plain
        pluggy manager (no ``generation``) is always called."""
        generation = getattr(self.pm, "generation", None)
        if generation is None:
            return False
        if generation != self._idle[0]:
            if getattr(self.pm, "monitors", 1) > 0:
                idle: frozenset[str] = frozenset()
            else:
                idle = frozenset(
                    n for n in _PER_CALL_HOOKS if not getattr(self._hook, n).get_hookimpls()
                )
            self._idle = (generation, idle)
        return name in self._idle[1]

    async def _await_none(self, name: str, results: list[Any]) -> None:
        for result in results:
            if inspect.isawaitable(result):
                plugin = _plugin_of(result, getattr(self._hook, name).get_hookimpls())
                result = await result
                if result is not None:
                    raise HookContractError(
                        f"an implementation of {name} (plugin {plugin!r}) returned "
                        f"{result!r}, not None",
                        hook=name,
                        plugin=plugin,
                    )
            elif result is not None:
                plugin = _plugin_of(result, getattr(self._hook, name).get_hookimpls())
                raise HookContractError(
                    f"an implementation of {name} returned {result!r}, not None",
                    hook=name,
                    plugin=plugin,
                )

    # ---- state
    # The per-call hooks return what to await: ``DONE`` when nobody implements the hook
    # and nothing monitors (no coroutine made), else the call's own coroutine.
    def state_loaded(self, state: AgentState, ctx: RuntimeContext) -> Awaitable[None]:
        name = "hookagent_state_loaded"
        idle = self._idle  # _reaches_nobody()'s cached answer, read inline first
        if (
            idle[0] == getattr(self.pm, "generation", None) and name in idle[1]
        ) or self._reaches_nobody(name):
            return DONE
        return self._await_none(name, self._hook.hookagent_state_loaded(state=state, ctx=ctx))

    def before_persist(
        self, state: AgentState, ctx: RuntimeContext, outcome: str
    ) -> Awaitable[None]:
        name = "hookagent_before_persist"
        idle = self._idle  # _reaches_nobody()'s cached answer, read inline first
        if (
            idle[0] == getattr(self.pm, "generation", None) and name in idle[1]
        ) or self._reaches_nobody(name):
            return DONE
        results = self._hook.hookagent_before_persist(state=state, ctx=ctx, outcome=outcome)
        return self._await_none(name, results)

    def after_persist(
        self, state: AgentState, ctx: RuntimeContext, version: int
    ) -> Awaitable[None]:
        name = "hookagent_after_persist"
        idle = self._idle  # _reaches_nobody()'s cached answer, read inline first
        if (
            idle[0] == getattr(self.pm, "generation", None) and name in idle[1]
        ) or self._reaches_nobody(name):
            return DONE
        results = self._hook.hookagent_after_persist(state=state, ctx=ctx, version=version)
        return self._await_none(name, results)

    def default_state_store(self, agent_id: str) -> AgentStateStore | None:
        return self._hook.hookagent_default_state_store(agent_id=agent_id)  # type: ignore[no-any-return]

    def state_authority(self, config: AgentConfig, kernel: Kernel) -> Any:
        return self._hook.hookagent_state_authority(config=config, kernel=kernel)

    # ---- configuration
    def configure(self, config: AgentConfig, kernel: Kernel) -> None:
        self._hook.hookagent_configure(config=config, kernel=kernel)

    def token_counter(self) -> TokenCounter | None:
        counter = self._hook.hookagent_token_counter()
        if counter is not None and not callable(counter):
            raise HookContractError(
                f"hookagent_token_counter returned {counter!r}, not a callable (text) -> int",
                hook="hookagent_token_counter",
            )
        return counter  # type: ignore[no-any-return]

    def workspace(self, ctx: RuntimeContext, kernel: Kernel) -> Workspace | None:
        return self._hook.hookagent_workspace(ctx=ctx, kernel=kernel)  # type: ignore[no-any-return]

    # ---- the loop
    def build_model_request(self, request: ModelRequest, ctx: RuntimeContext) -> Awaitable[None]:
        name = "hookagent_build_model_request"
        idle = self._idle  # _reaches_nobody()'s cached answer, read inline first
        if (
            idle[0] == getattr(self.pm, "generation", None) and name in idle[1]
        ) or self._reaches_nobody(name):
            return DONE
        results = self._hook.hookagent_build_model_request(request=request, ctx=ctx)
        return self._await_none(name, results)

    def tool_middlewares(self) -> list[ToolMiddleware]:
        return [func for _, _, func in self.middleware_chain("hookagent_wrap_tool_call")]

    def model_middlewares(self) -> list[ModelMiddleware]:
        return [func for _, _, func in self.middleware_chain("hookagent_wrap_model_call")]

    def middleware_chain(self, name: str) -> list[tuple[int, str, Callable[..., Any]]]:
        """(order, plugin name, middleware), outermost first: one call per implementation
        (through pluggy), sorted by (order, plugin name)."""
        hook = getattr(self._hook, name)
        impls = hook.get_hookimpls()
        found: list[tuple[int, str, Callable[..., Any]]] = []
        for impl in impls:
            others = [i.plugin for i in impls if i is not impl]
            for value in self.pm.subset_hook_caller(name, remove_plugins=others)():
                if isinstance(value, Middleware):
                    found.append((value.order, impl.plugin_name, value.func))
                elif callable(value):
                    found.append((0, impl.plugin_name, value))
                else:
                    raise HookContractError(
                        f"{name} of plugin {impl.plugin_name!r} returned {value!r}, not a "
                        "callable or a Middleware",
                        hook=name,
                        plugin=impl.plugin_name,
                    )
        found.sort(key=lambda item: (item[0], item[1]))
        return found

    # ---- run events
    async def run_event(self, event: RunEvent) -> None:
        """Every observer sees the event, in pluggy order; one that fails is logged and
        never hides the event from the others (pluggy alone would stop at the first)."""
        callers = self.event_callers()
        if callers:
            await self.deliver(callers, event)

    def event_callers(self) -> list[Any]:
        """Who receives run events now (empty: nobody would see them, skip the event's
        dispatch); one attribute compare while no plugin or monitor came or went."""
        generation = getattr(self.pm, "generation", None)
        if generation is None or generation != self._observers[0]:
            return self._event_callers(generation)
        return self._observers[1]

    async def deliver(self, callers: list[Any], event: RunEvent) -> None:
        for caller in callers:
            try:
                for result in caller(event=event):
                    if inspect.isawaitable(result):
                        await result
            except Exception:
                _events_log.exception("a hookagent_on_run_event plugin failed")

    def _event_callers(self, generation: int | None) -> list[Any]:
        """One pluggy caller per observer (the hook itself when there is at most one),
        none when nobody would see the call; cached until a plugin is (un)registered or a
        monitor added or removed."""
        monitored = getattr(self.pm, "monitors", 1) > 0
        hook = self._hook.hookagent_on_run_event
        impls = hook.get_hookimpls()
        callers: list[Any]
        if not impls and not monitored:
            callers = []  # skip pluggy's dispatch: about ten events per agent call
        elif len(impls) <= 1:
            callers = [hook]
        else:
            callers = [
                self.pm.subset_hook_caller(
                    "hookagent_on_run_event",
                    remove_plugins=[i.plugin for i in impls if i is not impl],
                )
                for impl in reversed(impls)
            ]
        self._observers = (generation, callers)  # a plain pluggy manager: never reused
        return callers

    # ---- registration
    def collect(
        self, name: str, what: str, make: Callable[[str, dict[str, Any], str], Any] | None = None
    ) -> dict[str, tuple[Any, str]]:
        from .registry import Registrar, collect

        return collect(self.pm, name, what, make or Registrar)
