"""The history and the views of it that a call hands out, without copying it.

A call adds a few messages to a history that may hold tens of thousands. So that it costs
what it adds, nothing on its path copies the whole list:

- A ``History`` is a shared, read-only *base* (the first ``n`` items of a sequence that is
  only ever appended to: a tuple, or a store's message log) followed by a *tail* list of its
  own. Loading shares the store's messages; appending goes to the tail; a change inside the
  base copies it then (copy-on-write), and cutting the end off only moves the bound.
- A ``HistoryView`` (``History.view()``, what ``ModelRequest.messages`` is) is a snapshot:
  it shares the history's base and tail up to their lengths at that moment, so the
  history's later appends do not show in it and its own first change copies it into a list
  of its own. A tail a view still shares is copied by the history before the history
  changes it anywhere but at its end.

Messages are frozen values, so sharing them is safe; only the lists are copied on write.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from itertools import chain, islice
from typing import Any, SupportsIndex, overload

from .messages import Msg

__all__ = ["History", "HistoryView"]


def _flat(base: Sequence[Msg], n: int, tail: list[Msg], tn: int) -> list[Msg]:
    """The items as a new list (the one O(length) step: on a write, never on a read)."""
    part = base[:n]
    out = part if type(part) is list else list(part)
    out += tail if tn == len(tail) else tail[:tn]
    return out


def _item(base: Sequence[Msg], n: int, tail: list[Msg], tn: int, index: SupportsIndex) -> Msg:
    i = index.__index__()
    if i < 0:
        i += n + tn
        if i < 0:
            raise IndexError("history index out of range")
    if i < n:
        return base[i]
    if i - n >= tn:
        raise IndexError("history index out of range")
    return tail[i - n]


def _slice(base: Sequence[Msg], n: int, tail: list[Msg], tn: int, s: slice) -> list[Msg]:
    """``items[s]`` as a new list of what the slice covers only (``h[k:]`` costs its length)."""
    start, stop, step = s.indices(n + tn)
    if step != 1:
        return _flat(base, n, tail, tn)[s]
    if stop <= start:
        return []
    if start >= n:
        return tail[start - n : stop - n]
    part = base[start : min(stop, n)]
    out = part if type(part) is list else list(part)
    if stop > n:
        out += tail[: stop - n]
    return out


def _iter(base: Sequence[Msg], n: int, tail: list[Msg], tn: int) -> Iterator[Msg]:
    if not n:
        return iter(tail) if tn == len(tail) else islice(tail, tn)
    return chain(islice(base, n), islice(tail, tn))


def _reversed(base: Sequence[Msg], n: int, tail: list[Msg], tn: int) -> Iterator[Msg]:
    for i in range(tn - 1, -1, -1):
        yield tail[i]
    for i in range(n - 1, -1, -1):
        yield base[i]


def _same(a: Sequence[Msg], other: object) -> bool | Any:
    if isinstance(other, (History, HistoryView, list)):
        return len(a) == len(other) and all(x is y or x == y for x, y in zip(a, other, strict=True))
    return NotImplemented


class History(MutableSequence[Msg]):
    """The conversation history; tracks the lowest index changed since ``mark_committed``
    (``unchanged_prefix``), so that a store can append the new messages instead of
    rewriting everything. That mark is runtime-only and never serialised.

    ``History(items)`` copies a list (its owner may change it) and shares a tuple;
    ``History.shared`` shares a store's append-only log. See the module docstring.
    """

    __slots__ = ("_base", "_n", "_tail", "_tail_seen", "_unchanged")

    def __init__(self, items: Iterable[Msg] = (), *, committed: bool = False) -> None:
        if type(items) is tuple:
            self._base: Sequence[Msg] = items
            self._n = len(items)
            self._tail: list[Msg] = []
        else:
            self._base, self._n, self._tail = (), 0, list(items)
        self._tail_seen = 0
        """How much of the tail views share: it is copied before a change below that."""
        self._unchanged = len(self) if committed else 0

    @classmethod
    def shared(cls, log: Sequence[Msg], length: int, *, committed: bool = True) -> History:
        """A history of ``log[:length]`` that shares ``log`` (no copy).

        ``log`` must only ever be appended to (a store's message log): the history reads
        its first ``length`` items and never changes them, so whatever is appended later
        is invisible to it.
        """
        if not 0 <= length <= len(log):
            raise ValueError(f"length {length} is outside the log's 0..{len(log)}")
        history = cls()
        history._base, history._n = log, length
        if committed:
            history._unchanged = length
        return history

    # -- the change mark
    @property
    def unchanged_prefix(self) -> int:
        """How many leading messages are the same as at the last commit (load or save)."""
        return self._unchanged

    def mark_committed(self) -> None:
        self._unchanged = self._n + len(self._tail)

    def _touch(self, index: int) -> None:
        if index < self._unchanged:
            self._unchanged = max(index, 0)

    def _norm(self, index: SupportsIndex) -> int:
        i = index.__index__()
        return i + self._n + len(self._tail) if i < 0 else i

    # -- copy-on-write
    def _own_tail(self, at: int = 0) -> None:
        """Before the tail changes in place from its index ``at`` on (not an append): a
        view that shares the tail up to past ``at`` keeps the old list."""
        if at < self._tail_seen:
            self._tail = self._tail.copy()
            self._tail_seen = 0

    def _own_all(self) -> None:
        """Before a change inside the shared base: everything into a list of our own."""
        if self._n:
            self._tail = _flat(self._base, self._n, self._tail, len(self._tail))
            self._base, self._n, self._tail_seen = (), 0, 0
        else:
            self._own_tail()

    def view(self) -> HistoryView:
        """A snapshot of the history that shares its messages (what a model request gets)."""
        tn = len(self._tail)
        if tn > self._tail_seen:
            self._tail_seen = tn
        return HistoryView(self._base, self._n, self._tail, tn)

    # -- Sequence
    def __len__(self) -> int:
        return self._n + len(self._tail)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Msg: ...
    @overload
    def __getitem__(self, index: slice) -> list[Msg]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Msg | list[Msg]:
        if not self._n:
            return self._tail[index]
        if isinstance(index, slice):
            return _slice(self._base, self._n, self._tail, len(self._tail), index)
        return _item(self._base, self._n, self._tail, len(self._tail), index)

    def __iter__(self) -> Iterator[Msg]:
        if not self._n:
            return iter(self._tail)
        return chain(islice(self._base, self._n), self._tail)

    def __reversed__(self) -> Iterator[Msg]:
        return _reversed(self._base, self._n, self._tail, len(self._tail))

    def __eq__(self, other: object) -> bool:
        return _same(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"History({list(self)!r})"

    def __copy__(self) -> History:
        return History(list(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> History:
        return History(list(self))  # messages are frozen values

    def __reduce__(self) -> Any:
        return (History, (list(self),))

    # -- MutableSequence: every mutator records the lowest index it touched
    @overload
    def __setitem__(self, index: SupportsIndex, value: Msg) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[Msg]) -> None: ...
    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> None:
        size = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(size)
            self._touch(start if index.step in (None, 1) else 0)
            if step == 1 and start >= self._n:
                n = self._n
                self._own_tail(start - n)
                self._tail[start - n : max(start, stop) - n] = value
            else:
                self._own_all()
                self._tail[index] = value
            return
        i = self._norm(index)
        if not 0 <= i < size:
            raise IndexError("history assignment index out of range")
        self._touch(i)
        if i >= self._n:
            self._own_tail(i - self._n)
        else:
            self._own_all()
        self._tail[i - self._n] = value

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        size, n = len(self), self._n
        if isinstance(index, slice):
            start, stop, step = index.indices(size)
            self._touch(start if index.step in (None, 1) else 0)
            if step != 1:
                self._own_all()
                del self._tail[index]
            elif stop <= start:
                return
            elif start >= n:
                self._own_tail(start - n)
                del self._tail[start - n : stop - n]
            elif stop >= size:  # the end cut off inside the base: only the bound moves
                self._n, self._tail, self._tail_seen = start, [], 0
            else:
                self._own_all()
                del self._tail[start:stop]
            return
        i = self._norm(index)
        if not 0 <= i < size:
            raise IndexError("history assignment index out of range")
        self._touch(i)
        if i >= n:
            self._own_tail(i - n)
            del self._tail[i - n]
        elif i == size - 1:  # the base's last item, with an empty tail
            self._n -= 1
        else:
            self._own_all()
            del self._tail[i]

    def insert(self, index: SupportsIndex, value: Msg) -> None:
        size = len(self)
        i = min(max(self._norm(index), 0), size)
        self._touch(i)
        if i == size:
            self._tail.append(value)
            return
        if i >= self._n:
            self._own_tail(i - self._n)
        else:
            self._own_all()
        self._tail.insert(i - self._n, value)

    def append(self, value: Msg) -> None:
        self._tail.append(value)  # a view sharing the tail reads only up to its length

    def extend(self, values: Iterable[Msg]) -> None:
        if values is self:  # our own iterator would follow the tail as it grows
            values = list(values)
        self._tail.extend(values)

    def clear(self) -> None:
        self._unchanged = 0
        self._base, self._n, self._tail, self._tail_seen = (), 0, [], 0

    def reverse(self) -> None:
        self._unchanged = 0
        self._own_all()
        self._tail.reverse()

    def pop(self, index: SupportsIndex = -1) -> Msg:
        size = len(self)
        i = self._norm(index)
        if not 0 <= i < size:
            raise IndexError("pop from empty history" if not size else "pop index out of range")
        item = self[i]
        del self[i]
        return item

    def __iadd__(self, values: Iterable[Msg]) -> History:
        self.extend(values)
        return self

    def replace(self, items: Iterable[Msg]) -> None:
        """Swap the whole history (compaction, clear): the next save rewrites it."""
        self._unchanged = 0
        self._base, self._n, self._tail, self._tail_seen = (), 0, list(items), 0


class HistoryView(MutableSequence[Msg]):
    """A snapshot of a history's messages that shares them until it is changed.

    ``ModelRequest.messages`` of the loop's own requests: reading it (``[-1]``, ``len``,
    iteration, slices) costs what is read; its first change (``insert``, ``append``,
    assignment) copies it into a list of its own, so a request-shaping plugin never changes
    the history. ``list(view)`` or ``view.copy()`` gives a plain list.
    """

    __slots__ = ("_base", "_n", "_own", "_tail", "_tn")

    def __init__(self, base: Sequence[Msg], n: int, tail: list[Msg], tn: int) -> None:
        self._base, self._n, self._tail, self._tn = base, n, tail, tn
        self._own: list[Msg] | None = None

    def _mine(self) -> list[Msg]:
        own = self._own
        if own is None:
            own = self._own = _flat(self._base, self._n, self._tail, self._tn)
            self._base, self._n, self._tail, self._tn = (), 0, [], 0
        return own

    @property
    def copied(self) -> bool:
        """True once a change made this view copy the messages into a list of its own."""
        return self._own is not None

    # -- Sequence
    def __len__(self) -> int:
        own = self._own
        return self._n + self._tn if own is None else len(own)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Msg: ...
    @overload
    def __getitem__(self, index: slice) -> list[Msg]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Msg | list[Msg]:
        own = self._own
        if own is not None:
            return own[index]
        if isinstance(index, slice):
            return _slice(self._base, self._n, self._tail, self._tn, index)
        return _item(self._base, self._n, self._tail, self._tn, index)

    def __iter__(self) -> Iterator[Msg]:
        own = self._own
        if own is not None:
            return iter(own)
        return _iter(self._base, self._n, self._tail, self._tn)

    def __reversed__(self) -> Iterator[Msg]:
        own = self._own
        if own is not None:
            return reversed(own)
        return _reversed(self._base, self._n, self._tail, self._tn)

    def __eq__(self, other: object) -> bool:
        return _same(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"

    def copy(self) -> list[Msg]:
        return list(self)

    def __add__(self, other: Iterable[Msg]) -> list[Msg]:
        return [*self, *other]

    def __radd__(self, other: Iterable[Msg]) -> list[Msg]:
        return [*other, *self]

    def __copy__(self) -> HistoryView:
        return HistoryView((), 0, list(self), len(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> HistoryView:
        return self.__copy__()  # messages are frozen values

    def __reduce__(self) -> Any:
        return (list, (list(self),))

    # -- MutableSequence: the first change copies
    @overload
    def __setitem__(self, index: SupportsIndex, value: Msg) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[Msg]) -> None: ...
    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> None:
        self._mine()[index] = value

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        del self._mine()[index]

    def insert(self, index: SupportsIndex, value: Msg) -> None:
        self._mine().insert(index, value)

    def append(self, value: Msg) -> None:
        self._mine().append(value)

    def extend(self, values: Iterable[Msg]) -> None:
        if values is self:
            values = list(values)
        self._mine().extend(values)

    def clear(self) -> None:
        self._own = []
        self._base, self._n, self._tail, self._tn = (), 0, [], 0

    def reverse(self) -> None:
        self._mine().reverse()

    def pop(self, index: SupportsIndex = -1) -> Msg:
        return self._mine().pop(index)

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        self._mine().sort(key=key, reverse=reverse)

    def __iadd__(self, values: Iterable[Msg]) -> HistoryView:
        self.extend(values)
        return self
