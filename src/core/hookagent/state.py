"""AgentState: everything that makes an agent restartable, as top-level JSON sections.

The history is a ``History``: a list that remembers how much of its prefix is unchanged since
it was loaded or last saved, so that a store can append the new messages instead of rewriting
everything (``History.unchanged_prefix``). That mark is runtime-only and never serialised.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSequence
from typing import Any, Literal, SupportsIndex, TypeAlias, TypeVar, overload

import attrs

from .messages import Msg, ToolResultBlock

SCHEMA_VERSION = 1
"""The schema version this code writes; older ones are upcast by the codec."""

ANONYMOUS_USER = ""
"""A blank user_id is the anonymous partition."""

T = TypeVar("T")


class History(MutableSequence[Msg]):
    """The conversation history; tracks the lowest index changed since ``mark_committed``."""

    __slots__ = ("_items", "_unchanged")

    def __init__(self, items: Iterable[Msg] = (), *, committed: bool = False) -> None:
        self._items: list[Msg] = list(items)
        self._unchanged = len(self._items) if committed else 0

    # -- the change mark
    @property
    def unchanged_prefix(self) -> int:
        """How many leading messages are the same as at the last commit (load or save)."""
        return self._unchanged

    def mark_committed(self) -> None:
        self._unchanged = len(self._items)

    def _touch(self, index: int) -> None:
        if index < self._unchanged:
            self._unchanged = max(index, 0)

    def _norm(self, index: SupportsIndex) -> int:
        i = index.__index__()
        return i + len(self._items) if i < 0 else i

    # -- Sequence
    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Msg: ...
    @overload
    def __getitem__(self, index: slice) -> list[Msg]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Msg | list[Msg]:
        return self._items[index]

    def __iter__(self) -> Iterator[Msg]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            return self._items == other._items
        if isinstance(other, list):
            return self._items == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"History({self._items!r})"

    # -- MutableSequence: every mutator records the lowest index it touched
    @overload
    def __setitem__(self, index: SupportsIndex, value: Msg) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[Msg]) -> None: ...
    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> None:
        if isinstance(index, slice):
            self._touch(index.indices(len(self._items))[0] if index.step in (None, 1) else 0)
        else:
            self._touch(self._norm(index))
        self._items[index] = value

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        if isinstance(index, slice):
            self._touch(index.indices(len(self._items))[0] if index.step in (None, 1) else 0)
        else:
            self._touch(self._norm(index))
        del self._items[index]

    def insert(self, index: SupportsIndex, value: Msg) -> None:
        self._touch(min(self._norm(index), len(self._items)))
        self._items.insert(index, value)

    def append(self, value: Msg) -> None:
        self._items.append(value)

    def extend(self, values: Iterable[Msg]) -> None:
        self._items.extend(values)

    def clear(self) -> None:
        self._unchanged = 0
        self._items.clear()

    def reverse(self) -> None:
        self._unchanged = 0
        self._items.reverse()

    def pop(self, index: SupportsIndex = -1) -> Msg:
        self._touch(self._norm(index))
        return self._items.pop(index)

    def __iadd__(self, values: Iterable[Msg]) -> History:
        self._items.extend(values)
        return self

    def replace(self, items: Iterable[Msg]) -> None:
        """Swap the whole history (compaction, clear): the next save rewrites it."""
        self._unchanged = 0
        self._items = list(items)


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


@attrs.define
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
