"""RuntimeContext: per-call identity, attributes and the call-scoped AgentState.

Its ``user_id``/``session_id`` select the state slot; ``run_id`` is never None and ties every
event, log line and handle of one execution together. Attributes are never persisted and
never sent to the model.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs

from .messages import new_id
from .state import ANONYMOUS_USER, AgentState, plain_setattr

if TYPE_CHECKING:
    from .agent import Agent

T = TypeVar("T")


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()
"""Marker for ``derive``: keep the parent's value."""


_LOADING: ContextVar[RuntimeContext | None] = ContextVar("hookagent_loading_run", default=None)


def loading_run_context() -> RuntimeContext | None:
    """The context of the run whose state the kernel is loading right now (set only while
    the kernel awaits its store's ``get_versioned`` for that run); None everywhere else,
    including inside the run's tools and hooks.

    For a store that is the state's authority (``hookagent_state_authority``): it can take
    the run's writer lease in the load's own round trip. Code a run calls (a tool reading
    its own session) never looks like a run's load.
    """
    return _LOADING.get()


def new_run_id() -> str:
    return new_id()


def _run_id(value: str | None) -> str:
    if value is None or not str(value).strip():
        return new_run_id()
    if not isinstance(value, str):
        raise TypeError(f"run_id must be a str, got {type(value).__name__}")
    return value


@attrs.define(eq=False, field_transformer=plain_setattr)
class RuntimeContext:
    """Per-call metadata passed to ``agent.call(msgs, ctx)``; create one per execution."""

    user_id: str = ANONYMOUS_USER
    session_id: str | None = None
    run_id: str = attrs.field(default=None, converter=_run_id)
    extra: dict[str, Any] = attrs.Factory(dict)
    agent_state: AgentState | None = attrs.field(default=None, kw_only=True)
    parent_run_id: str | None = attrs.field(default=None, kw_only=True)
    turn_id: str | None = attrs.field(default=None, kw_only=True)
    """The turn this run belongs to: None starts a new turn (the kernel sets it at
    admission); a call that answers a suspended turn continues it under a new run_id."""
    _typed: dict[type, Any] = attrs.field(factory=dict, alias="typed", kw_only=True)

    def __setattr__(self, name: str, value: Any) -> None:
        """``run_id`` is converted on assignment too (None draws a fresh id); the rest is
        set as given, without attrs' per-assignment hook calls (the kernel sets
        ``agent_state`` and ``turn_id`` on every call)."""
        object.__setattr__(self, name, _run_id(value) if name == "run_id" else value)

    @classmethod
    def empty(cls) -> RuntimeContext:
        return cls()

    # ---- attributes
    @overload
    def get(self, key: type[T], default: T | None = None) -> T | None: ...
    @overload
    def get(self, key: str, default: Any = None) -> Any: ...
    def get(self, key: str | type[Any], default: Any = None) -> Any:
        """String key: ``extra[key]``. Type: exact type, then the most specific supertype."""
        if isinstance(key, str):
            return self.extra.get(key, default)
        if key in self._typed:
            return self._typed[key]
        for base in key.__mro__[1:]:
            if base in self._typed:
                return self._typed[base]
        return default

    @overload
    def put(self, key: type[T], value: T) -> RuntimeContext: ...
    @overload
    def put(self, key: str, value: Any) -> RuntimeContext: ...
    def put(self, key: str | type[Any], value: Any) -> RuntimeContext:
        if isinstance(key, str):
            self.extra[key] = value
        elif isinstance(key, type):
            if value is not None and not isinstance(value, key):
                raise TypeError(f"value for {key.__name__} is a {type(value).__name__}")
            self._typed[key] = value
        else:
            raise TypeError(f"attribute keys are str or type, got {type(key).__name__}")
        return self

    # ---- derivation
    def derive(
        self,
        *,
        user_id: str = KEEP,
        session_id: str | None = KEEP,
        run_id: str | None = KEEP,
        turn_id: str | None = KEEP,
    ) -> RuntimeContext:
        """A new context with this one's identity and attributes (a copy of each map).

        The run_id is kept (subagents stay linked to the parent run) unless ``run_id=None``
        (a fresh id, for a new run) or an explicit value is given. The new context has no
        agent_state: the call that uses it injects its own. The turn_id is kept too: resume
        a suspended turn with ``ctx.derive(run_id=None)`` (the reference's idiom).
        """
        child = RuntimeContext(
            user_id=self.user_id if user_id is KEEP else user_id,
            session_id=self.session_id if session_id is KEEP else session_id,
            run_id=self.run_id if run_id is KEEP else run_id,
            turn_id=self.turn_id if turn_id is KEEP else turn_id,
            extra=dict(self.extra),
            typed=dict(self._typed),
        )
        if child.run_id == self.run_id:
            child.parent_run_id = self.run_id
        return child


async def resolve_agent_state(ctx: RuntimeContext | None, agent: Agent) -> AgentState:
    """The call's state if the call injected one, else the agent's default-session slot.

    The fallback is not a session-routing guarantee: inside a call always read
    ``ctx.agent_state``.
    """
    if ctx is not None and ctx.agent_state is not None:
        return ctx.agent_state
    return await agent.get_agent_state(ANONYMOUS_USER, None)
