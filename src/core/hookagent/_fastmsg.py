"""The hot path of loading: a parsed message dict to a ``Msg``, strictly, without cattrs.

Loading a 4,000-message history decodes 4,000 messages; through cattrs that costs ~10 µs
each, here ~1.5 µs. This accepts only exactly what the codec writes (the same fields, types
and tags); anything else raises ``Mismatch`` and the caller structures the document again
through the cattrs converter, which either accepts it or says precisely what is wrong. So
this path can only be stricter than the converter, never looser.

Values are built without running the attrs ``__init__`` (``object.__new__`` and the slot
descriptors): the frozen ``__init__`` goes through ``object.__setattr__`` per field and the
``Msg.content`` converter, which is half the cost here. That is sound only while the classes
have no validators, converters other than ``Msg.content``'s, or ``__attrs_post_init__``:
``check_bypass_is_sound`` asserts that at import, so a change to ``messages.py`` that breaks
the assumption fails loudly instead of silently skipping a check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from .messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    _blocks,
)

_ROLES = frozenset({"user", "assistant", "system", "tool"})
_MSG_KEYS = frozenset({"role", "content", "name", "id", "metadata", "timestamp"})
_USE_STATES = frozenset({"requested", "streaming"})
_RESULT_STATES = frozenset({"success", "error", "interrupted", "denied"})
_TEXT = frozenset({"type", "text"})
_THINKING = frozenset({"type", "thinking"})
_IMAGE = frozenset({"type", "url", "media_type"})
_DATA = frozenset({"type", "url", "media_type", "name"})
_USE = frozenset({"type", "id", "name", "input", "state"})
_RESULT = frozenset({"type", "id", "name", "output", "state"})


_ABSENT: Any = object()


class Mismatch(Exception):
    pass


def check_bypass_is_sound() -> None:
    """Fail at import if building values without ``__init__`` could skip a rule."""
    for cls in (Msg, TextBlock, ThinkingBlock, ImageBlock, DataBlock, ToolUseBlock):
        _plain(cls)
    _plain(ToolResultBlock)
    for field in attrs.fields(Msg):
        converter: Any = field.converter  # the fast path builds content as _blocks would
        if field.validator is not None or converter not in (None, _blocks):
            raise RuntimeError(f"Msg.{field.name} gained a validator or converter")


def _plain(cls: type[Any]) -> None:
    if hasattr(cls, "__attrs_post_init__") or "__slots__" not in cls.__dict__:
        raise RuntimeError(f"{cls.__name__} is no longer a plain slotted attrs class")
    for field in attrs.fields(cls):
        if field.validator is not None or (cls is not Msg and field.converter is not None):
            raise RuntimeError(f"{cls.__name__}.{field.name} gained a validator or converter")


check_bypass_is_sound()

_new = object.__new__


def _setters(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot descriptors' setters, in field order (they skip the frozen ``__setattr__``)."""
    return tuple(cls.__dict__[f.name].__set__ for f in attrs.fields(cls))


_M_ROLE, _M_CONTENT, _M_NAME, _M_ID, _M_META, _M_TS = _setters(Msg)
_T_TEXT, _T_TYPE = _setters(TextBlock)
_K_THINKING, _K_TYPE = _setters(ThinkingBlock)
_U_ID, _U_NAME, _U_INPUT, _U_STATE, _U_TYPE = _setters(ToolUseBlock)
_R_ID, _R_NAME, _R_OUTPUT, _R_STATE, _R_TYPE = _setters(ToolResultBlock)


def _text(text: Any) -> TextBlock:
    if type(text) is not str:
        raise Mismatch
    block = _new(TextBlock)
    _T_TEXT(block, text)
    _T_TYPE(block, "text")
    return block


def _str(value: Any) -> str:
    if type(value) is not str:
        raise Mismatch
    return value


def _opt_str(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise Mismatch
    return value


def _keys(doc: dict[str, Any], allowed: frozenset[str]) -> None:
    if not doc.keys() <= allowed:
        raise Mismatch


def _output(doc: Any) -> TextBlock | ImageBlock | DataBlock:
    if type(doc) is not dict:
        raise Mismatch
    tag = doc.get("type")
    if tag == "text":
        _keys(doc, _TEXT)
        return _text(doc["text"])
    if tag == "image":
        _keys(doc, _IMAGE)
        return ImageBlock(_str(doc["url"]), _opt_str(doc.get("media_type")))
    if tag == "data":
        _keys(doc, _DATA)
        return DataBlock(
            _str(doc["url"]), _opt_str(doc.get("media_type")), _opt_str(doc.get("name"))
        )
    raise Mismatch


def _free(value: dict[str, Any], check_json: Callable[[Any], None]) -> None:
    """Depth-check a free-form dict, skipping the common flat case (only scalar values)."""
    for v in value.values():
        if type(v) is dict or type(v) is list:
            check_json(value)
            return


def _free_dict(doc: dict[str, Any], key: str, check_json: Callable[[Any], None]) -> Any:
    """A free-form object field: a fresh ``{}`` when omitted, never an explicit null."""
    value = doc.get(key, _ABSENT)
    if value is _ABSENT:
        return {}
    if type(value) is not dict:
        raise Mismatch
    if value:
        _free(value, check_json)
    return value


def _tool_use(doc: dict[str, Any], check_json: Callable[[Any], None]) -> ToolUseBlock:
    _keys(doc, _USE)
    args = _free_dict(doc, "input", check_json)
    state = doc.get("state", "requested")
    if state not in _USE_STATES:
        raise Mismatch
    block = _new(ToolUseBlock)
    _U_ID(block, _str(doc["id"]))
    _U_NAME(block, _str(doc["name"]))
    _U_INPUT(block, args)
    _U_STATE(block, state)
    _U_TYPE(block, "tool_use")
    return block


def _tool_result(doc: dict[str, Any]) -> ToolResultBlock:
    _keys(doc, _RESULT)
    output = doc.get("output", [])
    state = doc.get("state", "success")
    if type(output) is not list or state not in _RESULT_STATES:
        raise Mismatch
    if len(output) == 1 and type(only := output[0]) is dict and len(only) == 2:
        # the common case inline: one text block, exactly the keys "type" and "text"
        outs: tuple[Any, ...] = (
            (_text(only["text"]),) if only.get("type") == "text" else (_output(only),)
        )
    else:
        outs = tuple(map(_output, output))
    block = _new(ToolResultBlock)
    _R_ID(block, _str(doc["id"]))
    _R_NAME(block, _str(doc["name"]))
    _R_OUTPUT(block, outs)
    _R_STATE(block, state)
    _R_TYPE(block, "tool_result")
    return block


def _block(doc: Any, check_json: Callable[[Any], None]) -> Any:
    if type(doc) is not dict:
        raise Mismatch
    tag = doc.get("type")
    if tag == "text" or tag == "image" or tag == "data":
        return _output(doc)
    if tag == "tool_use":
        return _tool_use(doc, check_json)
    if tag == "tool_result":
        return _tool_result(doc)
    if tag == "thinking":
        _keys(doc, _THINKING)
        block = _new(ThinkingBlock)
        _K_THINKING(block, _str(doc["thinking"]))
        _K_TYPE(block, "thinking")
        return block
    raise Mismatch


def fast_msg(doc: Any, check_json: Callable[[Any], None]) -> Msg:
    """``check_json(value)`` depth-checks free-form values (tool input, metadata)."""
    try:
        return _fast_msg(doc, check_json)
    except (KeyError, TypeError):  # e.g. an unhashable value where a tag was expected
        raise Mismatch from None


def _fast_msg(doc: Any, check_json: Callable[[Any], None]) -> Msg:
    if type(doc) is not dict or not doc.keys() <= _MSG_KEYS:
        raise Mismatch
    role = doc["role"]
    msg_id = doc["id"]
    timestamp = doc["timestamp"]
    if role not in _ROLES or type(msg_id) is not str:
        raise Mismatch
    if type(timestamp) is not float:
        if type(timestamp) is not int:
            raise Mismatch
        timestamp = float(timestamp)
    name = doc.get("name")
    if name is not None and type(name) is not str:
        raise Mismatch
    metadata = _free_dict(doc, "metadata", check_json)
    content = doc.get("content", _ABSENT)
    if content is _ABSENT:
        blocks: tuple[Any, ...] = ()
    elif type(content) is not list:
        raise Mismatch
    elif len(content) == 1:
        block = content[0]
        if type(block) is dict and len(block) == 2 and block.get("type") == "text":
            # the common case inline: one text block, exactly the keys "type" and "text"
            text = block["text"]
            if type(text) is not str:
                raise Mismatch
            only = _new(TextBlock)
            _T_TEXT(only, text)
            _T_TYPE(only, "text")
            blocks = (only,)
        else:
            blocks = (_block(block, check_json),)
    else:
        out = []
        for block in content:
            if type(block) is dict and len(block) == 2 and block.get("type") == "text":
                out.append(_text(block["text"]))
            else:
                out.append(_block(block, check_json))
        blocks = tuple(out)
    msg = _new(Msg)
    _M_ROLE(msg, role)
    _M_CONTENT(msg, blocks)
    _M_NAME(msg, name)
    _M_ID(msg, msg_id)
    _M_META(msg, metadata)
    _M_TS(msg, timestamp)
    return msg


# ------------------------------------------------------------------------------ encoding


def msg_doc(msg: Msg, check_json: Callable[[Any], None]) -> dict[str, Any]:
    """The document the codec writes for ``msg``: the converter's, built by hand.

    Same keys in the same order as the converter's unstructure (fields that are never
    omitted first, then those not at their default), so the bytes are identical. Raises
    ``Mismatch`` for anything but the exact message and block classes (a subclass may carry
    more fields): the caller then takes the converter's path.
    """
    if type(msg) is not Msg:
        raise Mismatch
    doc: dict[str, Any] = {"role": msg.role}
    content = msg.content
    if content != ():
        doc["content"] = [_block_doc(block, check_json) for block in content]
    if msg.name is not None:
        doc["name"] = msg.name
    doc["id"] = msg.id
    metadata = msg.metadata
    if metadata != {}:
        if type(metadata) is not dict:
            raise Mismatch
        _free(metadata, check_json)
        doc["metadata"] = metadata
    doc["timestamp"] = msg.timestamp
    return doc


def _output_doc(block: Any) -> dict[str, Any]:
    kind = type(block)
    if kind is TextBlock:
        return {"text": block.text, "type": "text"}
    if kind is ImageBlock:
        doc = {"url": block.url, "type": "image"}
        if block.media_type is not None:
            doc["media_type"] = block.media_type
        return doc
    if kind is DataBlock:
        doc = {"url": block.url, "type": "data"}
        if block.media_type is not None:
            doc["media_type"] = block.media_type
        if block.name is not None:
            doc["name"] = block.name
        return doc
    raise Mismatch


def _block_doc(block: Any, check_json: Callable[[Any], None]) -> dict[str, Any]:
    kind = type(block)
    if kind is ToolUseBlock:
        doc: dict[str, Any] = {"id": block.id, "name": block.name, "type": "tool_use"}
        args = block.input
        if args != {}:
            if type(args) is not dict:
                raise Mismatch
            _free(args, check_json)
            doc["input"] = args
        if block.state != "requested":
            doc["state"] = block.state
        return doc
    if kind is ToolResultBlock:
        doc = {"id": block.id, "name": block.name, "type": "tool_result"}
        if block.output != ():
            doc["output"] = [_output_doc(b) for b in block.output]
        if block.state != "success":
            doc["state"] = block.state
        return doc
    if kind is ThinkingBlock:
        return {"thinking": block.thinking, "type": "thinking"}
    return _output_doc(block)
