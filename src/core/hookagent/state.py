"""AgentState: everything that makes an agent restartable, as top-level JSON sections.

The history is a ``History`` (``hookagent.history``): a list that remembers how much of its
prefix is unchanged since it was loaded or last saved, so that a store can append the new
messages instead of rewriting everything (``History.unchanged_prefix``), and that shares a
store's messages instead of copying them (copy-on-write). That mark is runtime-only and never
serialised.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypeAlias, TypeVar

import attrs

from .history import History, HistoryView
from .messages import Msg, ToolResultBlock

SCHEMA_VERSION = 1
"""The schema version this code writes; older ones are upcast by the codec."""

ANONYMOUS_USER = ""
"""A blank user_id is the anonymous partition."""

T = TypeVar("T")
__all__ = [
    "ANONYMOUS_USER",
    "SCHEMA_VERSION",
    "AgentState",
    "History",
    "HistoryView",
    "InteractionKind",
    "PendingInteraction",
    "ToolContext",
    "TurnContext",
]


def _history(value: Iterable[Msg] | History) -> History:
    return value if isinstance(value, History) else History(value)


@attrs.define
class ToolContext:
    activated_groups: list[str] = attrs.Factory(list)


InteractionKind: TypeAlias = Literal["confirm", "external_result"]


@attrs.define
class PendingInteraction:
    """A tool call waiting for a person (``confirm``) or an outside system (``external_result``).

    Keyed by the tool_use id it holds back; answered by ``Approve``/``Reject``/``ExternalResult``.
    """

    tool_use_id: str
    tool: str
    kind: InteractionKind
    prompt: str = ""
    input: dict[str, Any] = attrs.Factory(dict)
    data: dict[str, Any] = attrs.Factory(dict)


@attrs.define
class TurnContext:
    """The open turn of a suspended session (empty when no turn waits).

    While interactions are pending, the history ends with the assistant message ``step_id``
    whose tool calls are not all answered; ``results`` holds that step's finished results
    until the step completes, so the history never shows the model an unanswered tool_use.
    """

    turn_id: str | None = None
    step_id: str | None = None
    pending: list[PendingInteraction] = attrs.Factory(list)
    results: list[ToolResultBlock] = attrs.Factory(list)
    iterations: int = 0

    @property
    def suspended(self) -> bool:
        return bool(self.pending)


def plain_setattr(cls: type, fields: list[attrs.Attribute]) -> list[attrs.Attribute]:  # type: ignore[type-arg]
    """attrs ``field_transformer``: no on-setattr hook on any field, stated per field, so
    that attrs' ``__init__`` sets each one directly (not through the class's own
    ``__setattr__``, which converts what needs it on assignment)."""
    return [f.evolve(on_setattr=attrs.setters.NO_OP) for f in fields]


@attrs.define(field_transformer=plain_setattr)
class AgentState:
    """One (user_id, session_id) slot. Plugin sections live in ``extensions`` as plain JSON.

    The kernel types only what it uses itself. The reference's other sections
    (``permission_context``, ``plan_mode_context``, ``tasks_context``) are plugin sections:
    the plugin that owns one reads it with ``get_section`` and writes it with
    ``put_section``. A section this process does not know (a plugin that is not installed
    here) is kept as parsed JSON and written back unchanged.
    """

    session_id: str
    user_id: str = ANONYMOUS_USER
    summary: str | None = None
    context: History = attrs.field(factory=History, converter=_history)
    tool_context: ToolContext = attrs.Factory(ToolContext)
    turn_context: TurnContext = attrs.Factory(TurnContext)
    shutdown_interrupted: bool = False
    schema_version: int = SCHEMA_VERSION
    extensions: dict[str, Any] = attrs.Factory(dict)

    def __setattr__(self, name: str, value: Any) -> None:
        """``context`` is converted on assignment too (a list becomes a ``History``); the
        other sections are set as given. (attrs' own on-setattr hooks cost four calls and,
        for a field without a hook, a caught ``KeyError`` per assignment: a call makes
        several.)"""
        if name == "context" and type(value) is not History:
            value = _history(value)
        object.__setattr__(self, name, value)

    # ---- JSON
    def to_json(self) -> str:
        from .codec import encode_state

        return encode_state(self).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> AgentState:
        from .codec import decode_state

        return decode_state(text)

    # ---- plugin sections
    def get_section(self, name: str, cls: type[T]) -> T | None:
        """A plugin's section structured as ``cls`` (typed error if it does not fit)."""
        from .codec import structure

        raw = self.extensions.get(name)
        return None if raw is None else structure(raw, cls, where=name)

    def put_section(self, name: str, value: Any) -> None:
        """Store a plugin's section (an attrs instance or plain JSON data)."""
        from .codec import reserved_section, unstructure

        reserved_section(name)
        self.extensions[name] = unstructure(value)

    def clear_context(self) -> None:
        """Drop the history, the summary and a suspended turn; every other section stays."""
        self.context.replace(())
        self.summary = None
        self.turn_context = TurnContext()
