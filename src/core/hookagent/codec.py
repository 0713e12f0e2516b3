"""The one codec for everything stored: plain JSON in and out, fail closed.

Nothing here imports, evaluates or instantiates anything named by the data: blocks are
chosen from a fixed table by their tag or code, every other value is structured into a
class this module already knows. Every failure is one typed error that says where.

A message record (``encode_msg``) is format 2, a positional JSON array (``_compact``); a
state document and ``message_doc`` hold messages as JSON objects (format 1), and every
reader here takes both, so records written before format 2 keep loading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ._bigstate import SPLIT_FROM, decode_split
from ._bigstate import gc_paused as gc_paused
from ._bulk import bulk_records
from ._compact import compact_doc, compact_msg
from ._converter import _FIXED_DEPTH as _FIXED_DEPTH
from ._converter import _c as _c
from ._converter import _check_free as _check_free
from ._converter import _fast as _fast
from ._converter import _msg_doc as _msg_doc
from ._converter import make_converter as make_converter
from ._converter import msg_to_dict as msg_to_dict
from ._converter import structure as structure
from ._converter import unstructure as unstructure
from ._fasthead import fast_head_doc, fast_head_state
from ._fastmsg import Mismatch, fast_msg
from ._limits import MAX_DEPTH as MAX_DEPTH
from ._limits import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from ._limits import MAX_STATE_BYTES as MAX_STATE_BYTES
from ._limits import _dump, _parse
from ._limits import check_depth as check_depth
from .errors import InvalidState, UnsupportedSchemaVersion
from .messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock
from .state import SCHEMA_VERSION, AgentState, History, ToolContext, TurnContext

_KNOWN_SECTIONS = frozenset(f.name for f in attrs.fields(AgentState)) - {"extensions"}

# schema_version -> function turning a document of that version into one of version + 1
UPCASTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def reserved_section(name: str) -> None:
    """``put_section``'s rule for a plugin's name: a non-empty str that is no known section."""
    if not isinstance(name, str) or not name or name in _KNOWN_SECTIONS:
        raise InvalidState(f"{name!r} cannot be used as a plugin section name")


def _writable_section(name: object) -> None:
    """What ``state_to_dict`` writes back: any str key that decoding would keep as a
    section (``""`` included: a slot that loads must also save)."""
    if not isinstance(name, str) or name in _KNOWN_SECTIONS:
        raise InvalidState(f"{name!r} cannot be written as a plugin section")


# --------------------------------------------------------------------------- messages


message_doc = _msg_doc
"""The format-1 JSON document of a message (public: a session log embeds it in an event)."""


def _text_size(msg: Msg) -> int:
    """A lower bound of a message's encoded size from its text alone (each character is at
    least one byte): where a message's bulk is, found in a few attribute reads."""
    size = 0
    for block in msg.content:
        if isinstance(block, TextBlock):
            size += len(block.text)
        elif isinstance(block, ToolResultBlock):
            for out in block.output:
                if isinstance(out, TextBlock):
                    size += len(out.text)
        elif isinstance(block, ThinkingBlock):
            size += len(block.thinking)
    return size


def encode_msg(msg: Msg) -> bytes:
    """A message record in format 2 (``_compact``), or format 1 for what format 2 does not
    cover (a subclass, a value of the wrong type: the converter's document, as before).

    A message over the limit by its text is refused before it is encoded; its free-form
    values (tool input, metadata) are walked for depth as they are written, and a message
    over the limit through them is refused once encoded (at most its own size allocated)."""
    if not isinstance(msg, Msg):
        raise InvalidState(f"expected a Msg, got {type(msg).__name__}")
    try:
        doc: Any = compact_doc(msg, _check_free)
    except (TypeError, KeyError, AttributeError):
        doc = _msg_doc(msg)
    return _dump(doc, limit=MAX_MESSAGE_BYTES, what="message", bound=_text_size(msg))


def msg_from_dict(doc: Any, *, where: str = "message") -> Msg:
    """Parsed JSON to a ``Msg``: a format-2 array, or a format-1 object through the strict
    fast path, else the converter (which explains)."""
    if type(doc) is list:
        return compact_msg(doc, _check_free, where)
    try:
        return fast_msg(doc, _check_free)
    except Mismatch:
        return structure(doc, Msg, where=where)


def decode_msg(data: bytes | str) -> Msg:
    return msg_from_dict(_parse(data, limit=MAX_MESSAGE_BYTES, what="message"))


_PARSE_CHUNK = 128  # a large state document's history is parsed this many messages at a time


def decode_msgs(items: Sequence[bytes | str]) -> list[Msg]:
    """Decode many stored message records at once (a cold load), either format.

    Same rules, values and errors as ``decode_msg`` for each item (``_bulk`` takes the
    common shapes inline and hands the rest to the strict decoder); on any failure the items
    are decoded one by one, so the error names the first bad one. One parse per record, each
    built at once: a record's parse is freed before the next is parsed, so a cold load
    touches little fresh memory (each new page is a page fault, and faults were once most of
    a cold decode's time).
    """
    try:
        with gc_paused():
            return bulk_records(items, _check_free, fast_msg, MAX_MESSAGE_BYTES)
    except (ValueError, TypeError, AttributeError, UnicodeEncodeError, Mismatch):
        return [decode_msg(item) for item in items]  # InvalidState is a ValueError too


def msgs_from_dicts(docs: Sequence[Any]) -> list[Msg]:
    """``msg_from_dict`` of many parsed records at once (a session log's cold rebuild:
    the records were parsed with their commits): the same values, and on any failure the
    same error as ``msg_from_dict`` of the first bad one."""
    try:
        with gc_paused():
            return bulk_records(docs, _check_free, fast_msg, MAX_MESSAGE_BYTES, parsed=True)
    except (ValueError, TypeError, AttributeError, UnicodeEncodeError, Mismatch):
        return [msg_from_dict(doc) for doc in docs]


# --------------------------------------------------------------------------- state


def _upcast(doc: dict[str, Any]) -> dict[str, Any]:
    version = doc.get("schema_version")
    if version is None:
        raise InvalidState("state has no schema_version")
    if type(version) is not int or version < 0:
        raise InvalidState(f"schema_version must be a non-negative integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise UnsupportedSchemaVersion(
            f"state has schema_version {version}; this hookagent reads up to {SCHEMA_VERSION}"
        )
    while version < SCHEMA_VERSION:
        step = UPCASTERS.get(version)
        if step is None:
            raise UnsupportedSchemaVersion(f"no upcaster from schema_version {version}")
        doc = step(doc)
        version += 1
        doc["schema_version"] = version
    return doc


def state_from_dict(doc: Any, *, context: Sequence[Msg] | None = None) -> AgentState:
    """Structure a parsed state; with ``context`` given, the history comes from there."""
    if not isinstance(doc, dict):
        raise InvalidState(f"state must be a JSON object, got {type(doc).__name__}")
    doc = _upcast(dict(doc))
    known = {k: v for k, v in doc.items() if k in _KNOWN_SECTIONS}
    if context is not None:
        known["context"] = []
    elif "context" not in known:
        raise InvalidState("state has no context")
    for required in ("session_id",):
        if required not in known:
            raise InvalidState(f"state has no {required}")
    state = structure(known, AgentState, where="")
    if context is not None:
        state.context = History(context, committed=True)
    state.extensions = {k: v for k, v in doc.items() if k not in _KNOWN_SECTIONS}
    for name, value in state.extensions.items():
        check_depth(value, MAX_DEPTH - 1, where=f"section {name!r}")
    return state


_IDLE_TURN = TurnContext()


def state_to_dict(state: AgentState, *, with_context: bool = True) -> dict[str, Any]:
    if not isinstance(state, AgentState):
        raise InvalidState(f"expected an AgentState, got {type(state).__name__}")
    doc: dict[str, Any] = {}
    for field in attrs.fields(AgentState):
        name = field.name
        if name == "extensions" or (name == "context" and not with_context):
            continue
        if name == "turn_context" and state.turn_context == _IDLE_TURN:
            continue  # written only while a turn is suspended: idle heads stay as they were
        doc[name] = _c.unstructure(getattr(state, name), field.type)  # hooks warmed at import
    if state.schema_version != SCHEMA_VERSION:
        raise UnsupportedSchemaVersion(
            f"cannot write a state of schema_version {state.schema_version!r}: this hookagent "
            f"writes only {SCHEMA_VERSION} (a state decoded here is upcast to it)"
        )
    for name, value in state.extensions.items():
        _writable_section(name)
        doc[name] = value
    return doc


def encode_state(state: AgentState, *, limit: int = MAX_STATE_BYTES) -> bytes:
    doc = state_to_dict(state)  # messages' free-form values are checked as they are written
    for name, value in doc.items():
        if name != "context":
            check_depth(value, MAX_DEPTH - 1, where=f"section {name!r}")
    return _dump(doc, limit=limit, what="state")


def decode_state(data: bytes | str, *, limit: int = MAX_STATE_BYTES) -> AgentState:
    """A whole state from JSON. Its history is not committed (``unchanged_prefix == 0``):
    nothing says a store holds it, so the next save writes every message."""
    if isinstance(data, (bytes, bytearray)) and SPLIT_FROM <= len(data) <= limit:
        state = decode_split(bytes(data), _check_free, state_from_dict, _PARSE_CHUNK)
        if state is not None:
            return state
    return state_from_dict(_parse(data, limit=limit, what="state"))


def encode_head(state: AgentState) -> bytes:
    """Every section but the history (stores keep the history as separate records)."""
    doc = fast_head_doc(state)  # the common shape, checked: no converter, no walk
    if doc is None:
        doc = state_to_dict(state, with_context=False)
        check_depth(doc, where="state head")
    # the summary is where a head's bulk is: over the limit, it is refused before encoding;
    # a section over it is refused once encoded (at most its own size allocated)
    bound = len(state.summary) if isinstance(state.summary, str) else 0
    return _dump(doc, limit=MAX_STATE_BYTES, what="state head", bound=bound)


def decode_head(data: bytes | str, context: Sequence[Msg]) -> AgentState:
    doc = _parse(data, limit=MAX_STATE_BYTES, what="state head")
    state = fast_head_state(doc, context)  # the common shape; else the converter explains
    return state if state is not None else state_from_dict(doc, context=context)


def dumps(value: Any, *, limit: int = MAX_STATE_BYTES, what: str = "document") -> bytes:
    """Encode plain JSON data (events, store metadata) with the same limits."""
    check_depth(value, where=what)
    return _dump(value, limit=limit, what=what)


def loads(data: bytes | str, *, limit: int = MAX_STATE_BYTES, what: str = "document") -> Any:
    doc = _parse(data, limit=limit, what=what)
    check_depth(doc, where=what)
    return doc


def _warm_paths() -> None:
    """Then run the real paths once: generating one class's hook clears cattrs's dispatch
    cache, so some hooks warmed above are generated again on their first real use."""
    state = AgentState(
        session_id="warm",
        tool_context=ToolContext(activated_groups=["g"]),
    )
    for _ in range(2):
        decode_head(encode_head(state), ())
        decode_state(encode_state(state))


_warm_paths()
