"""The ``session-log`` plugin: the log as the state's authority, and the recorder.

* ``hookagent_state_authority``: with ``AgentConfig(session_log=...)`` the kernel loads and
  saves through a ``LogBackedStore`` (the state store is not consulted).
* ``hookagent_state_loaded``: the run takes the session's writer lease, owned by its
  run_id (a finished run_id is sealed: reusing it is refused; a turn the log shows
  completed is refused too).
* The innermost model and tool middlewares (order 10000): the run's new facts, a
  checkpoint when the state changed and ``model/dispatch`` (``tool/dispatch``) are durable
  before the provider (the tool) is called; if that commit fails, it is not called.
* The final save is the recording's last commit; a run that fails before it releases the
  lease and seals its run_id (``hookagent_on_run_event``).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from hookagent import (
    Agent,
    AgentConfig,
    AgentState,
    ConfigurationError,
    Middleware,
    ModelRequest,
    ModelResponse,
    Msg,
    PendingInteraction,
    RunEvent,
    RuntimeContext,
    ToolCall,
    ToolResultBlock,
    hookimpl,
)
from hookagent.errors import AgentError, VersionConflict
from hookagent.sessionlog import InMemorySessionLog

from . import catalogue as c
from .errors import TurnAlreadyCompleted
from .heartbeat import HEARTBEAT
from .recording import Recording, lease_of, segment_messages_of
from .store import LIVE, LogBackedStore

log = logging.getLogger("hookagent.session_log")
PLUGIN = "session-log"
ORDER = 10_000
"""Innermost in both chains: a dispatch is recorded right before the provider or tool runs."""
_OPTIONS = frozenset({"lease_seconds", "log_options", "durability", "segment_messages"})
DURABILITY = ("dispatch", "tools")
"""``dispatch`` (the default, the reference's rule): a commit is durable before every model
call and every tool run. ``tools``: before every tool run and at the run's end; a model
call's dispatch is recorded in the next commit (a crash mid-call loses that record only)."""
_STORES: weakref.WeakSet[LogBackedStore] = weakref.WeakSet()
_MEMORY_LOGS: dict[str, InMemorySessionLog] = {}
_ENDS = frozenset({"run_finished", "run_failed", "run_suspended", "run_interrupted"})


@hookimpl
def hookagent_register_session_logs(register: Any) -> None:
    def memory(url: str, **options: Any) -> InMemorySessionLog:
        """``memory://NAME``: one log per name in this process (tests, demos)."""
        return _MEMORY_LOGS.setdefault(url, InMemorySessionLog())

    register("memory", memory, locality="process")


@hookimpl
def hookagent_configure(config: AgentConfig, kernel: Any) -> None:
    options = config.plugin_options.get(PLUGIN)
    if options is None:
        return
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ConfigurationError(
            f"session-log: unknown option(s) {sorted(unknown)}; known: {sorted(_OPTIONS)}"
        )
    if config.session_log is None:
        raise ConfigurationError(
            "session-log: options are set but AgentConfig(session_log=...) is not: name the log"
        )
    lease_of(dict(options))
    segment_messages_of(dict(options))
    if options.get("durability", "dispatch") not in DURABILITY:
        raise ConfigurationError(
            f"session-log: durability is one of {DURABILITY}, got {options.get('durability')!r}"
        )


@hookimpl
def hookagent_state_authority(config: AgentConfig, kernel: Any) -> LogBackedStore | None:
    if config.session_log is None:
        return None
    options = dict(config.plugin_options.get(PLUGIN, {}))
    store = LogBackedStore(
        config.session_log,
        plugin_manager=kernel.pm,
        lease=lease_of(options),
        options=dict(options.get("log_options", {})),
        durability=str(options.get("durability", "dispatch")),
        segment_messages=segment_messages_of(options),
    )
    _STORES.add(store)
    return store


async def _store(ctx: RuntimeContext) -> LogBackedStore | None:
    agent = ctx.get(Agent)
    if agent is None or agent.config.session_log is None:
        return None
    store = await agent.kernel.store()
    return store if isinstance(store, LogBackedStore) else None


@hookimpl
async def hookagent_state_loaded(state: AgentState, ctx: RuntimeContext) -> None:
    store = await _store(ctx)
    if store is None:
        return
    seq = store.loaded_seq(state)
    slot = (state.user_id, state.session_id)
    if seq is None:
        seq = 0 if not len(state.context) else -1
    if seq < 0:
        raise AgentError(f"session-log: {slot}: the run's state was not loaded from the log")
    log_ = await store.log()
    writer = store.acquired.pop(slot, None)
    if writer is None or writer.owner != ctx.run_id:  # loaded outside this run (a cache)
        writer = await log_.acquire(*slot, ctx.run_id, store.lease)
    proj = store.warm(slot) if writer.seq else None
    try:
        if writer.seq != seq or (writer.seq and proj is None):
            raise VersionConflict(slot[0], slot[1], "agent_state", seq, writer.seq)
        if proj is not None and ctx.turn_id in proj.completed_turns:
            raise TurnAlreadyCompleted(
                f"turn {ctx.turn_id!r} of session {slot[1]!r} is completed: send new input "
                "without its turn_id"
            )
    except BaseException:
        await log_.release(writer)
        raise
    from .projection import Projection

    rec = Recording(
        log_,
        writer,
        proj or Projection(*slot),
        store.lease,
        run_id=ctx.run_id,
        turn_id=ctx.turn_id,
        state=state,
        loaded_seq=seq,
        seq=writer.seq,
        durability=store.durability,
        segment_messages=store.segment_messages,
        flushed=state.context.unchanged_prefix,
    )
    agent = ctx.get(Agent)
    rec.note(c.RUN_STARTED, {"agent_id": agent.agent_id if agent else None})
    store.attach(slot, rec)
    HEARTBEAT.watch(rec)


def _recording(ctx: RuntimeContext) -> Recording | None:
    state = ctx.agent_state
    if state is None:
        return None
    rec = LIVE.get((state.user_id, state.session_id, ctx.run_id))
    if rec is not None and rec.state is state:
        return rec
    for store in _STORES:  # (a run_id reused on the same slot by another store's run)
        rec = store.recordings.get((state.user_id, state.session_id))
        if rec is not None and rec.run_id == ctx.run_id and rec.state is state:
            return rec
    return None


async def record_model(
    request: ModelRequest,
    ctx: RuntimeContext,
    call_next: Callable[[ModelRequest], Awaitable[ModelResponse]],
) -> ModelResponse:
    rec = _recording(ctx)
    if rec is None or ctx.agent_state is None:
        return await call_next(request)
    payload = {"purpose": str(request.purpose), "messages": len(request.messages)}
    if rec.durability == "tools":
        rec.note(c.MODEL_DISPATCH, payload)  # committed with the next tool dispatch or the end
    else:
        await rec.flush(ctx.agent_state, [rec.fact(c.MODEL_DISPATCH, payload)])
    return await call_next(request)  # its message is the next message/appended fact


async def record_tool(
    call: ToolCall, ctx: RuntimeContext, call_next: Callable[[ToolCall], Awaitable[Any]]
) -> Any:
    rec = _recording(ctx)
    state = ctx.agent_state
    if rec is None or state is None:
        return await call_next(call)
    use = call.use
    payload = {"id": use.id, "name": use.name}
    rec.in_flight += 1
    try:
        await rec.flush(state, [rec.fact(c.TOOL_DISPATCH, payload)])
        out = await call_next(call)
    finally:
        rec.in_flight -= 1
    if isinstance(out, ToolResultBlock):
        outcome = rec.fact(c.TOOL_RESULT, {"id": out.id, "m": Msg("tool", [out], id="result")})
    elif isinstance(out, PendingInteraction):
        outcome = rec.fact(c.TOOL_SUSPENDED, {"id": use.id})
    else:
        return out
    if rec.in_flight:  # another call of this step still runs: make this outcome durable now
        await rec.flush(state, [outcome])
    else:  # the step's last call: its outcome goes with the commit that follows at once
        rec.pending.append(outcome)  # (the next model call's dispatch, the suspension, the end)
    return out


@hookimpl
def hookagent_wrap_model_call() -> Middleware:
    return Middleware(record_model, order=ORDER)


@hookimpl
def hookagent_wrap_tool_call() -> Middleware:
    return Middleware(record_tool, order=ORDER)


@hookimpl
def hookagent_before_persist(state: AgentState, ctx: RuntimeContext, outcome: str) -> None:
    rec = _recording(ctx)
    if rec is not None:
        rec.outcome = outcome


@hookimpl
def hookagent_on_run_event(event: RunEvent) -> Awaitable[None] | None:
    """A plain function: a call's ten-odd events that are not its end make no coroutine
    (the kernel awaits what an observer returns)."""
    if event.kind not in _ENDS:
        return None
    return _run_ended(event)


async def _run_ended(event: RunEvent) -> None:
    for store in list(_STORES):
        slot = (event.user_id, event.session_id)
        early = store.acquired.get(slot)
        if early is not None and early.owner == event.run_id:  # refused after its load
            del store.acquired[slot]
            try:
                await (await store.log()).release(early)
            except Exception:
                log.warning("session-log: could not release run %s", event.run_id, exc_info=True)
        rec = store.recordings.get(slot)
        if rec is None or rec.run_id != event.run_id:
            continue
        store.detach(slot)
        HEARTBEAT.forget(rec)
        if rec.finished:
            continue
        try:  # the final save never happened (or failed): give the lease back, seal the id
            await rec.log.release(rec.writer)
            await rec.log.seal(*slot, rec.writer.owner)
        except Exception:
            log.warning(
                "session-log: could not release the lease of run %s", event.run_id, exc_info=True
            )


@hookimpl(optionalhook=True)
def hookagent_register_cli_commands(register: Any) -> None:
    register(
        "log",
        help="the session log: show, tail, export, reconcile, fork, import, export-state",
        module=f"{__package__}.cli",  # imported when the command runs
        common=False,
    )
