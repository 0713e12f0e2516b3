"""Keeping the trusted contract away from the model.

The functions that confirm requirements, begin tasks and record evidence carry a mark. At
configure time the plugin refuses a configuration whose tools include a marked function
(registered directly, as a bound method, through ``functools.partial``, or behind a
``functools.wraps`` wrapper, which copies the mark); the model middleware also drops any
offered tool spec whose tool is marked, so the model's tool list never holds one even where a
configuration was not checked. Code that *calls* a trusted function inside a tool of its own
is application code deciding to hand its authority to the model: nothing can tell that apart
from a legitimate use, so the docs say so plainly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from .errors import TrustedFunctionAsTool

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__hookagent_tasks_trusted__"


def trusted(func: F) -> F:
    """Mark ``func`` as part of the trusted contract: never a model tool."""
    setattr(func, MARK, True)
    return func


def is_trusted(obj: Any) -> bool:
    """``obj`` is, wraps or binds a trusted function (a ``Tool`` is checked by its func)."""
    seen: set[int] = set()
    todo = [obj]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if getattr(item, MARK, False) is True:
            return True
        # a partial's func, a bound method's function, a functools.wraps wrapper's original
        for attr in ("func", "__func__", "__wrapped__"):
            inner = getattr(item, attr, None)
            if inner is not None and inner is not item and not isinstance(inner, type):
                todo.append(inner)
        call = type(item).__dict__.get("__call__")  # a callable object's own method
        if inspect.isfunction(call):
            todo.append(call)
    return False


def trusted_tools(tools: Mapping[str, Any]) -> list[str]:
    """The names of the tools (name → ``Tool``) whose function is trusted."""
    return sorted(name for name, tool in tools.items() if is_trusted(getattr(tool, "func", tool)))


def refuse_trusted(tools: Mapping[str, Any]) -> None:
    """``TrustedFunctionAsTool`` naming every tool that would hand the model the contract."""
    names = trusted_tools(tools)
    if names:
        raise TrustedFunctionAsTool(
            f"tool(s) {', '.join(repr(n) for n in names)} would offer the trusted task contract "
            "(begin_task, decide, set_subject_version, invalidate_subject, record_verification) "
            "to the model; these are for the application only"
        )


def without(specs: Iterable[Any], banned: frozenset[str]) -> list[Any]:
    return [s for s in specs if s.name not in banned]
