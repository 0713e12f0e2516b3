"""``AgentConfig``: everything an agent needs, fixed at startup and shared.

The first ``build()`` prepares the ``Kernel`` that every agent built from the configuration
shares (plugins, tools, model, store, gate, run registry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .gates import SessionGate
from .kernel import Kernel
from .models import Model
from .plugins import HookagentPluginManager
from .runs import AgentRunRegistry
from .store.base import AgentStateStore, ConflictPolicy
from .store.ids import check_id

if TYPE_CHECKING:
    from .agent import Agent


def _ids(value: str | None) -> str | None:
    return None if value is None else check_id(value, "agent_id")


def _plugin_options(_: object, attribute: object, value: object) -> None:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Mapping) for k, v in value.items()
    ):
        raise TypeError(
            "plugin_options maps a plugin's name to its options, e.g. "
            f'{{"permissions": {{"mode": "default"}}}}; got {value!r}'
        )


@attrs.frozen
class AgentConfig:
    """Everything an agent needs, fixed at startup and shared by every agent built from it.

    ``tools`` are always available; plugin-registered tools only when their group (by default
    the plugin's name) is in ``tool_groups`` (``"*"`` for all) or activated in the session's
    ``tool_context.activated_groups``. ``state_store`` is a store object or a URL whose scheme a store plugin registered;
    None uses the default a plugin declares (the JSON-file store), else in-memory with a
    warning. ``model`` is a model object or the name of a registered provider.
    ``plugin_manager`` uses a manager you made (``create_plugin_manager``) instead of a new
    one: its plugins and monitors (the test fixtures pass theirs).
    ``session_log`` (a URL or a ``hookagent.sessionlog.SessionLog``) makes a session log
    the state's authority (EVENT_LOG mode, the ``hookagent-session-log`` plugin): the
    ``state_store`` is then not consulted.
    ``plugin_options`` holds each plugin's options under its name (``{"permissions":
    {"mode": "explore"}}``); the plugin checks them in ``hookagent_configure``.
    ``max_iterations`` counts model calls per turn (a resumed turn goes on counting).
    ``parallel_tool_calls``: None runs one step's calls at once when every tool is
    ``concurrency_safe``; True always, False never; at most ``max_parallel_tool_calls``.
    """

    name: str = "agent"
    agent_id: str | None = attrs.field(default=None, converter=_ids)
    model: Model | str | None = None
    model_options: dict[str, Any] = attrs.Factory(dict)
    tools: Sequence[Callable[..., Any]] = ()
    tool_groups: Sequence[str] = ()
    plugins: Sequence[object] = ()
    plugin_options: Mapping[str, Mapping[str, Any]] = attrs.field(
        factory=dict, validator=_plugin_options
    )
    state_store: AgentStateStore | str | None = None
    state_store_options: dict[str, Any] = attrs.Factory(dict)
    session_log: Any = None
    default_session_id: str = "default"
    max_iterations: int = 10
    parallel_tool_calls: bool | None = None
    max_parallel_tool_calls: int = 8
    reload_each_call: bool = True
    conflict_policy: ConflictPolicy = ConflictPolicy.FAIL
    system_prompt: str | None = None
    session_gate: SessionGate | None = None
    gate_timeout: float | None = None
    run_registry: AgentRunRegistry | None = None
    shutdown_timeout: float = 30.0
    autoload_plugins: bool | None = None
    strict_plugins: bool | None = None
    plugin_manager: HookagentPluginManager | None = None
    _kernel: list[Kernel] = attrs.field(factory=list, init=False, eq=False, repr=False)

    @property
    def id(self) -> str:
        return self.agent_id or self.name

    @property
    def kernel(self) -> Kernel:
        if not self._kernel:
            self._kernel.append(Kernel(self))
        return self._kernel[0]

    def build(self) -> Agent:
        """A new, cheap agent instance; close it (or use ``async with``) after the request."""
        kernel = self._kernel[0] if self._kernel else self.kernel
        return kernel.agent_type(kernel)

    async def aclose(self) -> None:
        """Application shutdown: close the store and model this configuration opened."""
        if self._kernel:
            await self._kernel[0].aclose()
            self._kernel[0].close_portal()

    def close(self) -> None:
        if self._kernel:
            self._kernel[0].portal().call(self._kernel[0].aclose)
            self._kernel[0].close_portal()
