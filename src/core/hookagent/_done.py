"""An awaitable that is already done: what the kernel's quiet paths return.

A run records ten events and makes four per-call hook calls that, with nobody observing or
implementing them, have nothing to wait for. Returning ``DONE`` instead of running a
coroutine saves a coroutine object and its frame each time: ``await DONE`` is answered in C
(``__await__`` is an empty tuple's iterator) and never yields to the event loop, under any
backend.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any


class _Done:
    __slots__ = ()

    __await__: Any = ().__iter__  # a builtin: no Python frame; it ends at once with None

    def __repr__(self) -> str:
        return "DONE"


DONE: Awaitable[None] = _Done()  # awaitable through __await__

__all__ = ["DONE"]
