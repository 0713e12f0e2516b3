"""The private cattrs converter behind ``codec``: strict scalars, tagged blocks, no extra keys.

Split from ``codec`` by job: this module turns parsed JSON into the kernel's classes and back
(the converter, its hooks and its import-time warm-up); ``codec`` holds the byte formats, the
limits and the schema versions. Nothing here imports or instantiates a class named by the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.gen import make_dict_unstructure_fn, override

from ._bigstate import gc_paused
from ._fastmsg import Mismatch, fast_msg, msg_doc
from ._limits import MAX_DEPTH, check_depth
from .errors import InvalidState
from .messages import (
    BLOCK_TYPES,
    ContentBlock,
    Msg,
    OutputBlock,
)
from .state import AgentState, History

T = TypeVar("T")

_FIXED_DEPTH = 4  # state > context > message > content block: where free-form values start


def _check_free(value: Any) -> None:
    if value:
        check_depth(value, MAX_DEPTH - _FIXED_DEPTH, where="a free-form value")


def msg_to_dict(msg: Msg) -> dict[str, Any]:
    return _c.unstructure(msg, Msg)  # type: ignore[no-any-return]


def _msg_doc(msg: Msg) -> dict[str, Any]:
    """The format-1 document of a message (a JSON object), with its free-form values held
    to the limit that decoding applies (so a message that encodes always decodes)."""
    try:
        return msg_doc(msg, _check_free)
    except Mismatch:  # a subclass, or a value of the wrong type: the converter's path
        data = msg_to_dict(msg)
        # metadata sits one level below the message: the decoder's limit for it, exactly
        check_depth(data, MAX_DEPTH - _FIXED_DEPTH + 1, where="message")
        return data


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


_warm_up()
