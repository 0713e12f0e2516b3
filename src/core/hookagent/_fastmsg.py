"""The hot path of loading: a parsed message dict to a ``Msg``, strictly, without cattrs.

Loading a 4,000-message history decodes 4,000 messages; through cattrs that costs ~10 µs
each, here ~2 µs. This accepts only exactly what the codec writes (the same fields, types
and tags); anything else raises ``Mismatch`` and the caller structures the document again
through the cattrs converter, which either accepts it or says precisely what is wrong. So
this path can only be stricter than the converter, never looser.
"""

from __future__ import annotations

from typing import Any

from .messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

_ROLES = frozenset({"user", "assistant", "system", "tool"})
_MSG_KEYS = frozenset({"role", "content", "name", "id", "metadata", "timestamp"})
_USE_STATES = frozenset({"requested", "streaming"})
_RESULT_STATES = frozenset({"success", "error", "interrupted", "denied"})


class Mismatch(Exception):
    pass


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


_TEXT = frozenset({"type", "text"})
_THINKING = frozenset({"type", "thinking"})
_IMAGE = frozenset({"type", "url", "media_type"})
_DATA = frozenset({"type", "url", "media_type", "name"})
_USE = frozenset({"type", "id", "name", "input", "state"})
_RESULT = frozenset({"type", "id", "name", "output", "state"})


def _output(doc: Any) -> TextBlock | ImageBlock | DataBlock:
    if type(doc) is not dict:
        raise Mismatch
    tag = doc.get("type")
    if tag == "text":
        _keys(doc, _TEXT)
        return TextBlock(_str(doc["text"]))
    if tag == "image":
        _keys(doc, _IMAGE)
        return ImageBlock(_str(doc["url"]), _opt_str(doc.get("media_type")))
    if tag == "data":
        _keys(doc, _DATA)
        return DataBlock(
            _str(doc["url"]), _opt_str(doc.get("media_type")), _opt_str(doc.get("name"))
        )
    raise Mismatch


def _block(doc: Any, check_json: Any) -> Any:
    if type(doc) is not dict:
        raise Mismatch
    tag = doc.get("type")
    if tag in ("text", "image", "data"):
        return _output(doc)
    if tag == "tool_use":
        _keys(doc, _USE)
        args = doc.get("input", {})
        state = doc.get("state", "requested")
        if type(args) is not dict or state not in _USE_STATES:
            raise Mismatch
        check_json(args)
        return ToolUseBlock(_str(doc["id"]), _str(doc["name"]), args, state)
    if tag == "tool_result":
        _keys(doc, _RESULT)
        output = doc.get("output", [])
        state = doc.get("state", "success")
        if type(output) is not list or state not in _RESULT_STATES:
            raise Mismatch
        return ToolResultBlock(
            _str(doc["id"]), _str(doc["name"]), tuple(map(_output, output)), state
        )
    if tag == "thinking":
        _keys(doc, _THINKING)
        return ThinkingBlock(_str(doc["thinking"]))
    raise Mismatch


def fast_msg(doc: Any, check_json: Any) -> Msg:
    """``check_json(value)`` depth-checks free-form values (tool input, metadata)."""
    try:
        return _fast_msg(doc, check_json)
    except (KeyError, TypeError):  # e.g. an unhashable value where a tag was expected
        raise Mismatch from None


def _fast_msg(doc: Any, check_json: Any) -> Msg:
    if type(doc) is not dict or not doc.keys() <= _MSG_KEYS:
        raise Mismatch
    role = doc.get("role")
    content = doc.get("content", [])
    metadata = doc.get("metadata", {})
    timestamp = doc.get("timestamp")
    msg_id = doc.get("id")
    name = doc.get("name")
    if (
        role not in _ROLES
        or type(content) is not list
        or type(metadata) is not dict
        or type(msg_id) is not str
        or (name is not None and type(name) is not str)
    ):
        raise Mismatch
    if type(timestamp) is not float:
        if type(timestamp) is not int:
            raise Mismatch
        timestamp = float(timestamp)
    if metadata:
        check_json(metadata)
    blocks = []
    for block in content:
        # the common case inline: a text block
        if type(block) is dict and block.get("type") == "text" and block.keys() <= _TEXT:
            text = block.get("text")
            if type(text) is not str:
                raise Mismatch
            blocks.append(TextBlock(text))
        else:
            blocks.append(_block(block, check_json))
    return Msg(role, tuple(blocks), name, msg_id, metadata, timestamp)
