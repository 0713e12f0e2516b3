"""The hooks the kernel emits. ``docs/hooks.md`` documents each one (a test keeps them in step).

Conventions, for every hook:

* Implementations are called with keyword arguments and may take any subset of them. Never
  give an implementation's argument a default value: pluggy would silently not pass it.
* pluggy does not await. A hook marked *may be async* accepts ``async def`` implementations
  (or ones returning an awaitable); the kernel awaits the results one by one in pluggy's call
  order (last registered first, ``tryfirst``/``trylast`` respected). Synchronous
  implementations of such a hook run during the pluggy call, that is before any async body.
* No hook that may be async is ``firstresult`` or a wrapper. Middleware hooks return async
  callables that the kernel composes (the first result is outermost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .config import AgentConfig
    from .context import RuntimeContext
    from .events import RunEvent
    from .kernel import Kernel
    from .models import ModelRequest
    from .registry import ModelRegister, SessionLogRegister, StoreRegister, ToolRegister
    from .state import AgentState
    from .store.base import AgentStateStore
    from .tokens import TokenCounter
    from .workspace import Workspace

PROJECT = "hookagent"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------- registration


@hookspec(historic=True)
def hookagent_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    """Add hook specifications of a plugin's own (``pluginmanager.add_hookspecs(module)``).

    :param pluginmanager: the agent's plugin manager.

    Result: ignored. Called once for each plugin as it is registered (historic). Use it when
    your plugin emits hooks that other plugins implement (the CLI's command hook does).
    """


@hookspec
def hookagent_register_tools(register: ToolRegister) -> None:
    """Register tools: plain sync or async functions, whose JSON schema comes from the signature.

    :param register: ``register(func, *, name=None, description=None, group=None,
        read_only=None, concurrency_safe=None, timeout=None)`` (``hookagent.ToolRegister``);
        traits left None come from the function's ``@hookagent.tool(...)``, else defaults.

    Result: ignored. Called once when the agent configuration is prepared. A duplicate tool
    name raises ``ToolDefinitionError`` naming both registrants.
    """


@hookspec
def hookagent_register_models(register: ModelRegister) -> None:
    """Register model providers selectable by name (``AgentConfig(model="name")``).

    :param register: ``register(name, factory)``; ``factory(**options)`` returns a model.

    Result: ignored. Called once when the configuration is prepared and by ``hookagent plugins``.
    """


@hookspec
def hookagent_register_state_stores(register: StoreRegister) -> None:
    """Register the URL schemes a store plugin serves.

    :param register: ``register(scheme, factory)``; ``factory(url, **options)`` returns an
        ``AgentStateStore`` (a coroutine is awaited).

    Result: ignored. A configuration whose ``state_store`` is a URL is bound to the factory
    registered for its scheme; installing a plugin never rebinds an explicit choice.
    """


@hookspec
def hookagent_register_session_logs(register: SessionLogRegister) -> None:
    """Register the URL schemes of a plugin's session-log backends.

    :param register: ``register(scheme, factory, locality="shared")``
        (``hookagent.registry.SessionLogRegister``); ``factory(url, **options)`` returns a
        ``hookagent.sessionlog.SessionLog`` (a coroutine is awaited).

    Result: ignored. ``hookagent.sessionlog.open_session_log(url)`` and
    ``AgentConfig(session_log=url)`` pick the factory by the URL's scheme.
    """


@hookspec(firstresult=True)
def hookagent_state_authority(config: AgentConfig, kernel: Kernel) -> AgentStateStore | None:
    """Provide the store that is the authority for a configuration's sessions (synchronous).

    :param config: the configuration; ``config.session_log`` is what asks for one.
    :param kernel: its ``Kernel`` (plugins, tools and model are bound, the store is not).

    Result: an ``AgentStateStore`` (or an awaitable of one) that replaces ``state_store``:
    the kernel loads and saves through it alone. The first non-None wins; the session-log
    plugin answers for ``AgentConfig(session_log=...)``. A configuration with a
    ``session_log`` that no plugin answers for is refused with ``ConfigurationError``.
    """


@hookspec(firstresult=True)
def hookagent_default_state_store(agent_id: str) -> AgentStateStore | None:
    """Provide the store used when a configuration names none (synchronous only).

    :param agent_id: the configuration's agent_id (a default store roots itself under it).

    Result: the first non-None store wins; with none, the kernel uses the in-memory store and
    warns that state is lost on exit.
    """


@hookspec
def hookagent_configure(config: AgentConfig, kernel: Kernel) -> None:
    """Check a configuration once it is prepared (synchronous only).

    :param config: the ``AgentConfig``; a plugin's options are
        ``config.plugin_options.get("<plugin name>", {})``.
    :param kernel: its prepared ``Kernel``: plugins, tools, model and store are bound
        (``kernel.tools``, ``kernel.model``, ``kernel.store_locality``).

    Result: ignored. Called once, at the first ``config.build()``. Raise
    ``hookagent.ConfigurationError`` to refuse the configuration (bad options, a
    combination that cannot work); the error reaches the caller of ``build()``.
    """


@hookspec(firstresult=True)
def hookagent_token_counter() -> TokenCounter | None:
    """Provide the token counter the kernel and the plugins share (synchronous only).

    Result: a callable ``(text: str) -> int``; the first non-None wins. Called once per
    prepared configuration; with none, ``kernel.count_tokens`` estimates ``chars / 4``
    (``hookagent.estimate_tokens``).
    """


@hookspec(firstresult=True)
def hookagent_workspace(ctx: RuntimeContext, kernel: Kernel) -> Workspace | None:
    """The workspace of a call's slot (synchronous only; ``kernel.workspace(ctx)`` asks).

    :param ctx: the call's context (its user_id and session_id choose the workspace root).
    :param kernel: the configuration's ``Kernel`` whose ``workspace(ctx)`` asks: a provider
        configured per configuration (``plugin_options``) finds its settings by it, also
        outside a call, where ``ctx`` carries no ``Agent``.

    Result: a ``hookagent.Workspace``; the first non-None wins; None when no plugin
    provides one (plugins that use a workspace then skip that part, saying so).
    """


# --------------------------------------------------------------------------- state


@hookspec
def hookagent_state_loaded(state: AgentState, ctx: RuntimeContext) -> Any:
    """The call's state was loaded (or created) and put on ``ctx.agent_state``. May be async.

    :param state: the call-scoped state; mutations are saved with the call.
    :param ctx: the call's context.

    Result: None (or an awaitable of None). Validation or migration plugins raise here to
    refuse the call before the model is asked anything (nothing is saved).
    """


@hookspec
def hookagent_before_persist(state: AgentState, ctx: RuntimeContext, outcome: str) -> Any:
    """The state is about to be saved. May be async.

    :param state: the state that will be written; mutate it to add your section.
    :param ctx: the call's context.
    :param outcome: ``"success"`` (completed, max iterations, all tools denied),
        ``"suspended"``, ``"error"``, ``"interrupted"``, ``"shutdown"`` or ``"admin"``.

    Result: None (or an awaitable of None). An exception aborts the save; on a failed call the
    original error stays the one raised and this one is attached to it.
    """


@hookspec
def hookagent_after_persist(state: AgentState, ctx: RuntimeContext, version: int) -> Any:
    """The state was saved at ``version`` (0 when no store keeps it). May be async.

    :param state: the saved state.
    :param ctx: the call's context.
    :param version: the new version returned by the store.

    Result: None (or an awaitable of None).
    """


# --------------------------------------------------------------------------- the loop


@hookspec
def hookagent_build_model_request(request: ModelRequest, ctx: RuntimeContext) -> Any:
    """Shape the request about to be sent to the model. May be async.

    :param request: a mutable ``ModelRequest`` (system prompt, messages, tools, options);
        change it in place. Messages added here are transient views: they are never written
        into the durable history.
    :param ctx: the call's context (``ctx.agent_state`` is the durable state).

    Result: None (or an awaitable of None). Implementations run in pluggy order, each seeing
    the previous ones' changes.
    """


@hookspec
def hookagent_wrap_tool_call() -> Any:
    """Contribute a tool-call middleware. Called once per prepared configuration.

    Result: None, ``async def middleware(call: ToolCall, ctx, call_next)``, or a
    ``Middleware(func, order=N)`` (lower ``order`` is outer; ties by plugin name; a bare
    callable has order 0). ``call_next(call)`` runs the rest of the chain and the tool. A
    middleware may change the call, return its own ``ToolResultBlock`` without calling
    ``call_next`` (a permission plugin returns a ``denied`` result), post-process the
    result, or return a ``PendingInteraction`` (``hookagent.ask(call, prompt)`` or
    ``hookagent.await_external(call, prompt)``) to suspend the turn until an answer comes.
    ``call.tool`` carries the tool's traits (``read_only``, ``concurrency_safe``) and
    ``call.approved`` is True when a person approved this call: never ask again then.
    """


@hookspec
def hookagent_wrap_model_call() -> Any:
    """Contribute an around-the-model middleware. Called once per prepared configuration.

    Result: None, ``async def middleware(request: ModelRequest, ctx, call_next) ->
    ModelResponse``, or a ``Middleware(func, order=N)`` (ordered as the tool chain).
    ``call_next(request)`` runs the rest of the chain and the provider (streaming, with
    every delta of a reasoning request emitted as a ``model_delta`` event; a plugin's own
    request, e.g. a summary, emits none); call it again to retry or fail over,
    or answer without it (a cache). The chain runs inside the run's interrupt scope: catch
    ``ModelError`` (or your own errors), never bare ``Exception``, so that ``Interrupted``
    and cancellation pass through.
    """


@hookspec
def hookagent_on_run_event(event: RunEvent) -> Any:
    """Observe a run event (started, model/tool steps, state loaded/persisted, the end). May be async.

    :param event: a frozen ``RunEvent`` with ``kind``, agent_id, user_id, session_id, run_id,
        turn_id and ``data`` (the end event's ``data["outcome"]`` is the ``GenerateReason``).

    Result: None (or an awaitable of None). Called through pluggy for every event in
    emission order, also for plugins registered after the configuration was prepared; an
    exception here is logged and never breaks the run nor hides the event from others.
    """
