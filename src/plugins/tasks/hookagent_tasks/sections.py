"""Reading and writing the section on an ``AgentState``, and the projection's parse cache.

The tools and the admin API parse the section strictly each time (a tool call or an admin
change is rare next to a model request). The projection runs on every model request, so it
keeps the parsed section and its renderings: by the stored object (every writer here stores
a new object, never edits one in place, so the same object with the same revision is the
same content), else by the content's JSON encoding.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson
from hookagent.state import AgentState

from .model import SECTION, TasksContext
from .projection import View, render_state
from .sectionjson import parse_section, section_json
from .todos import render_result


def read(state: AgentState) -> TasksContext:
    """The state's section (empty when absent); ``InvalidTasksSection`` when it does not fit."""
    return parse_section(state.extensions.get(SECTION))


def write(state: AgentState, tc: TasksContext) -> None:
    """Store ``tc`` as the state's section (a new JSON object: the cache below relies on it)."""
    state.put_section(SECTION, section_json(tc))


class Parsed:
    """One stored section, parsed, with its renderings memoised."""

    __slots__ = ("_states", "full", "tc")

    def __init__(self, tc: TasksContext) -> None:
        self.tc = tc
        self.full = render_result(tc)
        self._states: dict[tuple[View, bool], str | None] = {}

    def state(self, tc: TasksContext, view: View, *, todos: bool) -> str | None:
        key = (view, todos)
        if key not in self._states:
            self._states[key] = render_state(tc, view, todos=todos)
        return self._states[key]


class ParseCache:
    """Parsed sections (a small LRU), found by the stored JSON object's identity first, then
    by its content: a state reloaded from the store holds a new object with the same
    content, and encoding it (tens of µs) is much cheaper than parsing it again."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._by_id: OrderedDict[int, tuple[Any, Any, Parsed]] = OrderedDict()
        self._by_content: OrderedDict[bytes, Parsed] = OrderedDict()
        self._lock = threading.Lock()  # agents may run on several threads' event loops

    def get(self, raw: Any) -> Parsed:
        """The parsed section for the stored JSON ``raw`` (``InvalidTasksSection`` if bad)."""
        key = id(raw)
        revision = raw.get("revision") if isinstance(raw, dict) else None
        with self._lock:
            hit = self._by_id.get(key)
            if hit is not None and hit[0] is raw and hit[1] == revision:
                self._by_id.move_to_end(key)
                return hit[2]
        try:
            content = orjson.dumps(raw)
        except TypeError:  # not JSON data: parse_section says what is wrong
            return Parsed(parse_section(raw))
        with self._lock:
            parsed = self._by_content.get(content)
            if parsed is not None:
                self._by_content.move_to_end(content)
        if parsed is None:
            parsed = Parsed(parse_section(raw))
        if isinstance(raw, dict):  # kept alive here, so its id cannot be reused meanwhile
            with self._lock:
                self._by_id[key] = (raw, revision, parsed)
                self._by_content[content] = parsed
                for table in (self._by_id, self._by_content):
                    while len(table) > self.size:
                        table.popitem(last=False)
        return parsed
