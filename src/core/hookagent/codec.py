"""The one codec for everything stored: plain JSON in and out, fail closed.

Nothing here imports, evaluates or instantiates anything named by the data: blocks are
chosen from a fixed table by their ``type`` tag, every other value is structured into a
class this module already knows. Every failure is one typed error that says where.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
import orjson
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.gen import make_dict_unstructure_fn, override

from ._bigstate import SPLIT_FROM, decode_split
from ._bigstate import gc_paused as gc_paused
from ._fastmsg import Mismatch, fast_msg, msg_doc
from ._limits import MAX_DEPTH as MAX_DEPTH
from ._limits import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from ._limits import MAX_STATE_BYTES as MAX_STATE_BYTES
from ._limits import _dump, _parse
from ._limits import check_depth as check_depth
from .errors import InvalidState, UnsupportedSchemaVersion
from .messages import (
    BLOCK_TYPES,
    ContentBlock,
    Msg,
    OutputBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
)
from .state import (
    SCHEMA_VERSION,
    AgentState,
    History,
    ToolContext,
    TurnContext,
)

T = TypeVar("T")


_KNOWN_SECTIONS = frozenset(f.name for f in attrs.fields(AgentState)) - {"extensions"}

# schema_version -> function turning a document of that version into one of version + 1
UPCASTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


# --------------------------------------------------------------------------- converter


def _block_hooks(c: cattrs.Converter) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def structure_block(obj: Any, _: Any) -> ContentBlock:
        if not isinstance(obj, dict):
            raise InvalidState(f"content block must be an object, got {type(obj).__name__}")
        tag = obj.get("type")
        cls = BLOCK_TYPES.get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise InvalidState(f"unknown content block type {tag!r}")
        return c.structure(obj, cls)  # type: ignore[no-any-return,unused-ignore]

    def structure_output(obj: Any, t: Any) -> OutputBlock:
        block = structure_block(obj, t)
        if block.type not in ("text", "image", "data"):
            raise InvalidState(f"a tool_result output cannot hold a {block.type!r} block")
        return block

    return structure_block, structure_output


def _structure_json(obj: Any, _: Any) -> Any:
    """Free-form JSON (tool input, metadata): kept as data, never revived; depth-checked
    here, so that a document's known structure is not walked twice."""
    if isinstance(obj, (dict, list)):
        check_depth(obj, MAX_DEPTH - _FIXED_DEPTH, where="a free-form value")
    return obj


def _structure_str(obj: Any, _: Any) -> str:
    if not isinstance(obj, str):
        raise InvalidState(f"expected a string, got {type(obj).__name__}")
    return obj


def _structure_int(obj: Any, _: Any) -> int:
    if type(obj) is not int:
        raise InvalidState(f"expected an integer, got {type(obj).__name__}")
    return obj


def _structure_bool(obj: Any, _: Any) -> bool:
    if type(obj) is not bool:
        raise InvalidState(f"expected a boolean, got {type(obj).__name__}")
    return obj


def _structure_float(obj: Any, _: Any) -> float:
    if type(obj) not in (int, float):
        raise InvalidState(f"expected a number, got {type(obj).__name__}")
    return float(obj)


def _strict(kind: type, factory: Any, label: str) -> Any:
    """cattrs accepts any iterable for a list (a dict, a str): accept only the JSON type."""

    def make(t: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
        inner = factory(t, conv)

        def hook(obj: Any, tp: Any) -> Any:
            if not isinstance(obj, kind):
                raise InvalidState(f"expected {label}, got {type(obj).__name__}")
            return inner(obj, tp)

        return hook

    return make


def _origin_is(kind: Any) -> Callable[[Any], bool]:
    return lambda t: bool(get_origin(t) == kind)


def _omit_defaults(c: cattrs.Converter, cls: type) -> None:
    """Messages are most of what is stored: leave out fields at their default (never the tag)."""
    hook: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls, c, _cattrs_omit_if_default=True, type=override(omit_if_default=False)
    )
    c.register_unstructure_hook(cls, hook)


def make_converter(*, detailed: bool = True) -> cattrs.Converter:
    """The private converter: strict scalars, tagged blocks, no extra keys in known classes.

    ``detailed=False`` is the fast path every decode takes first; only a failure is
    structured again with detailed validation, to say which field is wrong.
    """
    c = cattrs.Converter(forbid_extra_keys=True, detailed_validation=detailed)
    structure_block, structure_output = _block_hooks(c)
    c.register_structure_hook(str, _structure_str)
    c.register_structure_hook(int, _structure_int)
    c.register_structure_hook(bool, _structure_bool)
    c.register_structure_hook(float, _structure_float)
    c.register_structure_hook(Any, _structure_json)
    c.register_structure_hook_factory(
        _origin_is(list), _strict(list, list_structure_factory, "an array")
    )
    c.register_structure_hook_factory(
        lambda t: _origin_is(tuple)(t) and ... in get_args(t),
        _strict(list, homogenous_tuple_structure_factory, "an array"),
    )
    c.register_structure_hook_factory(
        _origin_is(dict), _strict(dict, mapping_structure_factory, "an object")
    )
    c.register_structure_hook(ContentBlock, structure_block)
    c.register_structure_hook(OutputBlock, structure_output)

    def structure_history(obj: Any, _: Any) -> History:
        if type(obj) is list:
            try:
                with gc_paused():
                    return History([fast_msg(doc, _check_free) for doc in obj])
            except Mismatch:
                pass  # the converter says which message and field is wrong
        # not committed: a history decoded from JSON is not known to be what any store holds,
        # so the next save writes all of it (an edit made through JSON is never dropped)
        return History(c.structure(obj, list[Msg]))

    c.register_structure_hook(History, structure_history)
    c.register_unstructure_hook(History, lambda h: [_msg_doc(m) for m in h])
    c.register_unstructure_hook(ContentBlock, lambda b: c.unstructure(b, type(b)))
    c.register_unstructure_hook(OutputBlock, lambda b: c.unstructure(b, type(b)))
    for cls in BLOCK_TYPES.values():
        _omit_defaults(c, cls)
    c.register_unstructure_hook(
        Msg,
        make_dict_unstructure_fn(
            Msg, c, _cattrs_omit_if_default=True, role=override(omit_if_default=False)
        ),
    )
    return c


_c = make_converter()
_fast = make_converter(detailed=False)


def _warm_up() -> None:
    """cattrs compiles a class's hooks on first use (milliseconds each): do it at import,
    not inside some process's first call."""
    attrs.resolve_types(AgentState)
    for field in attrs.fields(AgentState):
        if field.name in ("context", "extensions"):
            continue
        for conv in (_c, _fast):
            conv.get_structure_hook(field.type)
            conv.get_unstructure_hook(field.type)
    for conv in (_c, _fast):
        conv.get_structure_hook(AgentState)
        conv.get_structure_hook(Msg)
        conv.get_unstructure_hook(Msg)
        for cls in BLOCK_TYPES.values():
            conv.get_structure_hook(cls)
            conv.get_unstructure_hook(cls)


_FIXED_DEPTH = 4  # state > context > message > content block: where free-form values start


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


_warm_up()


def _explain(exc: BaseException, where: str) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        parts = cattrs.transform_error(exc, path=f"$.{where}" if where else "$")
        return "; ".join(parts)
    return str(exc)


def structure(data: Any, cls: type[T], *, where: str = "") -> T:
    """Turn parsed JSON into ``cls``; any mismatch is an ``InvalidState`` naming the field."""
    try:
        return _fast.structure(data, cls)
    except Exception:  # noqa: S110 - structured again below, to explain
        pass
    try:
        return _c.structure(data, cls)
    except InvalidState:
        raise
    except Exception as exc:  # cattrs groups, KeyError, TypeError ... all become one type
        raise InvalidState(f"invalid {cls.__name__}: {_explain(exc, where)}") from None


def unstructure(value: Any) -> Any:
    return _c.unstructure(value)


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


def msg_to_dict(msg: Msg) -> dict[str, Any]:
    return _c.unstructure(msg, Msg)  # type: ignore[no-any-return]


def _msg_doc(msg: Msg) -> dict[str, Any]:
    """What is stored for a message, with its free-form values held to the limit that
    decoding applies (so a message that encodes always decodes)."""
    try:
        return msg_doc(msg, _check_free)
    except Mismatch:  # a subclass, or a value of the wrong type: the converter's path
        data = msg_to_dict(msg)
        # metadata sits one level below the message: the decoder's limit for it, exactly
        check_depth(data, MAX_DEPTH - _FIXED_DEPTH + 1, where="message")
        return data


message_doc = _msg_doc
"""The JSON document stored for a message (public: a session log embeds it in an event)."""


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
    """A message over the limit by its text is refused before it is encoded; its free-form
    values (tool input, metadata) were walked for depth already, and a message over the
    limit through them is refused once encoded (at most its own size allocated)."""
    if not isinstance(msg, Msg):
        raise InvalidState(f"expected a Msg, got {type(msg).__name__}")
    return _dump(_msg_doc(msg), limit=MAX_MESSAGE_BYTES, what="message", bound=_text_size(msg))


def _check_free(value: Any) -> None:
    if value:
        check_depth(value, MAX_DEPTH - _FIXED_DEPTH, where="a free-form value")


def msg_from_dict(doc: Any, *, where: str = "message") -> Msg:
    """Parsed JSON to a ``Msg``: the strict fast path, else the converter (which explains)."""
    try:
        return fast_msg(doc, _check_free)
    except Mismatch:
        return structure(doc, Msg, where=where)


def decode_msg(data: bytes | str) -> Msg:
    return msg_from_dict(_parse(data, limit=MAX_MESSAGE_BYTES, what="message"))


_PARSE_CHUNK = 128


def decode_msgs(items: Sequence[bytes | str]) -> list[Msg]:
    """Decode many stored messages at once (a cold load): one parse per chunk of messages.

    Same rules and errors as ``decode_msg`` for each item; on any failure the items are
    decoded one by one, so the error names the first bad one. Chunks, not one parse of the
    whole batch: the parsed documents of a chunk are freed before the next one is parsed, so
    a cold load touches a third of the fresh memory (each new page is a page fault, and
    faults were most of a cold decode's time).
    """
    out: list[Msg] = []
    try:
        with gc_paused():
            for at in range(0, len(items), _PARSE_CHUNK):
                raw = [
                    i if type(i) is bytes else i.encode("utf-8")  # type: ignore[union-attr]
                    for i in items[at : at + _PARSE_CHUNK]
                ]
                if max(map(len, raw)) > MAX_MESSAGE_BYTES or not all(
                    r.lstrip()[:1] == b"{" for r in raw
                ):
                    raise ValueError
                docs = orjson.loads(b"[" + b",".join(raw) + b"]")
                if len(docs) != len(raw):
                    raise ValueError  # an item held more than one value ("{...},{...}")
                out += [fast_msg(doc, _check_free) for doc in docs]
        return out
    except (ValueError, TypeError, AttributeError, UnicodeEncodeError, Mismatch):
        return [decode_msg(item) for item in items]


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
    doc = state_to_dict(state, with_context=False)
    check_depth(doc, where="state head")
    # the summary is where a head's bulk is: over the limit, it is refused before encoding;
    # a section over it is refused once encoded (at most its own size allocated)
    bound = len(state.summary) if isinstance(state.summary, str) else 0
    return _dump(doc, limit=MAX_STATE_BYTES, what="state head", bound=bound)


def decode_head(data: bytes | str, context: Sequence[Msg]) -> AgentState:
    doc = _parse(data, limit=MAX_STATE_BYTES, what="state head")
    return state_from_dict(doc, context=context)


def dumps(value: Any, *, limit: int = MAX_STATE_BYTES, what: str = "document") -> bytes:
    """Encode plain JSON data (events, store metadata) with the same limits."""
    check_depth(value, where=what)
    return _dump(value, limit=limit, what=what)


def loads(data: bytes | str, *, limit: int = MAX_STATE_BYTES, what: str = "document") -> Any:
    doc = _parse(data, limit=limit, what=what)
    check_depth(doc, where=what)
    return doc


_warm_paths()
