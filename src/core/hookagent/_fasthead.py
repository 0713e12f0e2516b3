"""The state head's common shape, encoded and decoded without the converter.

Every call decodes one head and encodes one (a store keeps the history apart). Almost every
head is the same shape: two ids, a summary or none, the activated tool groups, no suspended
turn, plugin sections. For exactly that shape (exact types, the current schema) these build
the same document and the same ``AgentState`` as the converter's path, in a few dict reads;
anything else returns None and the caller takes the converter's path, which says what is
wrong. Nothing here names a class from the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._limits import MAX_DEPTH, check_depth
from .errors import StateTooLarge
from .messages import Msg
from .state import (
    ANONYMOUS_USER,
    SCHEMA_VERSION,
    AgentState,
    History,
    ToolContext,
    TurnContext,
)

_IDLE_TURN = TurnContext()
_HEAD_KEYS = frozenset(
    ("session_id", "user_id", "summary", "tool_context", "shutdown_interrupted", "schema_version")
)
"""The known sections a fast head may hold (``context`` is the store's; a suspended
``turn_context`` goes the converter's way)."""
_SECTION_LIMIT = MAX_DEPTH - 1  # a plugin section sits one level below the head


def _groups(groups: Any) -> bool:
    if type(groups) is not list:
        return False
    for g in groups:
        if type(g) is not str:
            return False
    return True


def _sections_fit(sections: dict[str, Any]) -> bool:
    """True when every plugin section nests within the head's limit (else the converter's
    path raises the error, with its own wording)."""
    for value in sections.values():
        if type(value) is dict or type(value) is list:
            try:
                check_depth(value, _SECTION_LIMIT)
            except StateTooLarge:
                return False
    return True


def fast_head_doc(state: AgentState) -> dict[str, Any] | None:
    """``state_to_dict(state, with_context=False)`` for the common shape, already checked for
    depth; None for anything else."""
    if type(state) is not AgentState:
        return None
    sid, uid, summary = state.session_id, state.user_id, state.summary
    tools, flag, version = state.tool_context, state.shutdown_interrupted, state.schema_version
    if (
        type(sid) is not str
        or type(uid) is not str
        or (summary is not None and type(summary) is not str)
        or type(tools) is not ToolContext
        or type(flag) is not bool
        or type(version) is not int
        or version != SCHEMA_VERSION
        or type(tools.activated_groups) is not list
        or (tools.activated_groups and not _groups(tools.activated_groups))
        or state.turn_context != _IDLE_TURN
    ):
        return None
    doc: dict[str, Any] = {
        "session_id": sid,
        "user_id": uid,
        "summary": summary,
        "tool_context": {"activated_groups": list(tools.activated_groups)},
        "shutdown_interrupted": flag,
        "schema_version": version,
    }
    sections = state.extensions
    if sections:
        if type(sections) is not dict or not _sections_fit(sections):
            return None
        for name, value in sections.items():
            if type(name) is not str or name in _HEAD_KEYS or name in _OTHER_KNOWN:
                return None
            doc[name] = value
    return doc


_OTHER_KNOWN = frozenset(("context", "turn_context"))


def fast_head_state(doc: Any, context: Sequence[Msg]) -> AgentState | None:
    """``state_from_dict(doc, context=context)`` for the common shape; None for anything else
    (another schema version, a suspended turn, a value of another type)."""
    if type(doc) is not dict:
        return None
    version = doc.get("schema_version")
    sid = doc.get("session_id")
    uid = doc.get("user_id", ANONYMOUS_USER)
    summary = doc.get("summary")
    flag = doc.get("shutdown_interrupted", False)
    if (
        type(version) is not int
        or version != SCHEMA_VERSION
        or type(sid) is not str
        or type(uid) is not str
        or (summary is not None and type(summary) is not str)
        or type(flag) is not bool
        or "turn_context" in doc
    ):
        return None
    tools = doc.get("tool_context")
    if tools is None:
        if "tool_context" in doc:
            return None
        tool_context = ToolContext()
    else:
        if type(tools) is not dict or len(tools) > 1:
            return None
        groups = tools.get("activated_groups", None)
        if groups is None:
            if tools:
                return None
            tool_context = ToolContext()
        elif type(groups) is not list or (groups and not _groups(groups)):
            return None
        else:
            tool_context = ToolContext(groups)
    sections = {}
    for k, v in doc.items():  # a loop, not a comprehension: one call less per load
        if k not in _HEAD_KEYS and k != "context":
            sections[k] = v
    if sections and not _sections_fit(sections):
        return None
    return AgentState(
        sid,
        uid,
        summary,
        History(context, committed=True),
        tool_context,
        TurnContext(),
        flag,
        version,
        sections,
    )
