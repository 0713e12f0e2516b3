"""Format 2 of a stored message: a JSON array, positional, no keys (``encode_msg``'s output).

A history is most of what a store holds, and in format 1 (one JSON object per message, which
``message_doc`` still returns) the keys, block tags and hex ids were a third of the bytes. Here
a message is ``[role, content, id, timestamp]`` plus, only when not at their default,
``metadata`` and then ``name`` (``metadata`` written as ``{}`` when only ``name`` is set):

* ``role``: 0 user, 1 assistant, 2 system, 3 tool.
* ``content``: a string is one text block; otherwise an array of blocks, where a string is a
  text block and every other block is an array led by its code:
  ``[1, thinking]``, ``[2, id, name(, input(, state))]`` (tool use; state 1 = streaming),
  ``[3, id, name, output(, state)]`` (tool result; output a string for one text block, else
  an array of output blocks; state 1 error, 2 interrupted, 3 denied),
  ``[4, url(, media_type)]`` (image), ``[5, url(, media_type(, name))]`` (data; ``null``
  where a later element is set). Trailing elements at their default are left out.
* ``id``: a 32-character lowercase hex id (what ``new_id`` makes) as its 22-character
  base64 form (standard alphabet, padding left out); any other id as a one-element array ``[id]`` (so the two never collide).

A stored message that is a JSON object is format 1 (read by ``_fastmsg`` and the converter).
Decoding is strict and fails closed: a wrong type, code, length or value is an
``InvalidState`` that says where; nothing named by the data is ever imported or called.
Values are built without ``__init__``, as ``_fastmsg`` does (``check_bypass_is_sound``).
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

from ._fastmsg import (
    _K_THINKING,
    _K_TYPE,
    _M_CONTENT,
    _M_ID,
    _M_META,
    _M_NAME,
    _M_ROLE,
    _M_TS,
    _R_ID,
    _R_NAME,
    _R_OUTPUT,
    _R_STATE,
    _R_TYPE,
    _T_TEXT,
    _T_TYPE,
    _U_ID,
    _U_INPUT,
    _U_NAME,
    _U_STATE,
    _U_TYPE,
    _free,
    _new,
)
from .errors import InvalidState
from .messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

Check = Callable[[Any], None]

ROLES = ("user", "assistant", "system", "tool")
_ROLE_CODE = {r: i for i, r in enumerate(ROLES)}
USE_STATES = ("requested", "streaming")
_USE_CODE = {s: i for i, s in enumerate(USE_STATES)}
RESULT_STATES = ("success", "error", "interrupted", "denied")
_RESULT_CODE = {s: i for i, s in enumerate(RESULT_STATES)}
THINKING, TOOL_USE, TOOL_RESULT, IMAGE, DATA = 1, 2, 3, 4, 5

_b2a, _a2b = binascii.b2a_base64, binascii.a2b_base64


# ------------------------------------------------------------------------------ encoding


def _id_doc(msg_id: str) -> Any:
    """A lowercase 32-hex id packed into 22 base64 characters; any other id as ``[id]``."""
    if len(msg_id) == 32:
        try:
            raw = bytes.fromhex(msg_id)
        except ValueError:
            return [msg_id]
        if raw.hex() == msg_id:  # lowercase, no whitespace: the hex form decoding gives back
            return _b2a(raw)[:22].decode()  # 22 characters, then "==\n"
    return [msg_id]


def _output_doc(block: Any) -> Any:
    kind = type(block)
    if kind is TextBlock:
        return block.text
    if kind is ImageBlock:
        return (
            [IMAGE, block.url] if block.media_type is None else [IMAGE, block.url, block.media_type]
        )
    if kind is DataBlock:
        if block.name is not None:
            return [DATA, block.url, block.media_type, block.name]
        if block.media_type is not None:
            return [DATA, block.url, block.media_type]
        return [DATA, block.url]
    raise TypeError(f"not an output block: {kind.__name__}")


def _block_doc(block: Any, check: Check) -> Any:
    kind = type(block)
    if kind is ToolUseBlock:
        doc: list[Any] = [TOOL_USE, block.id, block.name]
        args, state = block.input, _USE_CODE[block.state]
        if type(args) is not dict:
            raise TypeError("tool input is not a dict")
        if args:
            _free(args, check)
        if state:
            doc += (args, state)
        elif args:
            doc.append(args)
        return doc
    if kind is ToolResultBlock:
        out = block.output
        output: Any
        if len(out) == 1 and type(out[0]) is TextBlock:
            output = out[0].text
        else:
            output = [_output_doc(b) for b in out]
        state = _RESULT_CODE[block.state]
        return (
            [TOOL_RESULT, block.id, block.name, output, state]
            if state
            else [
                TOOL_RESULT,
                block.id,
                block.name,
                output,
            ]
        )
    if kind is ThinkingBlock:
        return [THINKING, block.thinking]
    return _output_doc(block)


def compact_doc(msg: Msg, check: Check) -> list[Any]:
    """The format-2 document of ``msg`` (an exact ``Msg`` of the known block classes).

    Raises ``TypeError``/``KeyError`` for anything else (a subclass, a field of the wrong
    type): the caller then refuses the message through the converter, which says why.
    """
    if type(msg) is not Msg:
        raise TypeError("not exactly a Msg")
    content = msg.content
    if len(content) == 1 and type(content[0]) is TextBlock:
        body: Any = content[0].text
    else:
        body = [_block_doc(b, check) for b in content]
    ts = msg.timestamp
    if type(ts) is not float and type(ts) is not int:
        raise TypeError("timestamp is not a number")
    if type(msg.id) is not str:
        raise TypeError("id is not a string")
    doc = [_ROLE_CODE[msg.role], body, _id_doc(msg.id), ts]
    metadata, name = msg.metadata, msg.name
    if type(metadata) is not dict:
        raise TypeError("metadata is not a dict")
    if metadata:
        _free(metadata, check)
    if name is not None:
        doc += (metadata, name)
    elif metadata:
        doc.append(metadata)
    return doc


# ------------------------------------------------------------------------------ decoding


class _Bad(Exception):
    """A format-2 document is wrong; the caller adds where (built only on this path)."""


def _str(value: Any) -> str:
    if type(value) is not str:
        raise _Bad(f"expected a string, got {type(value).__name__}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _text(text: str) -> TextBlock:
    block = _new(TextBlock)
    _T_TEXT(block, text)
    _T_TYPE(block, "text")
    return block


def _dict(value: Any, check: Check) -> dict[str, Any]:
    if type(value) is not dict:
        raise _Bad(f"expected an object, got {type(value).__name__}")
    if value:
        _free(value, check)
    return value


def _code(doc: Any, lo: int, hi: int) -> int:
    if type(doc) is not list or not lo <= len(doc) <= hi:
        raise _Bad(f"a block must be a string or an array of {lo}-{hi} elements")
    code = doc[0]
    if type(code) is not int:
        raise _Bad(f"a block code must be an integer, got {type(code).__name__}")
    return code


def _state(table: tuple[str, ...], value: Any) -> str:
    if type(value) is not int or not 0 <= value < len(table):
        raise _Bad(f"unknown state code {value!r}")
    return table[value]


def _output(doc: Any) -> TextBlock | ImageBlock | DataBlock:
    if type(doc) is str:
        return _text(doc)
    code = _code(doc, 2, 4)
    n = len(doc)
    if code == IMAGE and n <= 3:
        return ImageBlock(_str(doc[1]), _opt_str(doc[2]) if n > 2 else None)
    if code == DATA:
        return DataBlock(
            _str(doc[1]),
            _opt_str(doc[2]) if n > 2 else None,
            _opt_str(doc[3]) if n > 3 else None,
        )
    raise _Bad(f"a tool result cannot output block code {code!r} of {n} elements")


def _outputs(output: Any) -> tuple[Any, ...]:
    if type(output) is str:
        return (_text(output),)
    if type(output) is not list:
        raise _Bad("a tool result's output must be a string or an array")
    try:
        return tuple([_output(o) for o in output])
    except _Bad:
        for i, o in enumerate(output):
            try:
                _output(o)
            except _Bad as exc:
                raise _Bad(f"output[{i}]: {exc}") from None
        raise


def _block(doc: Any, check: Check) -> Any:
    if type(doc) is str:
        return _text(doc)
    code = _code(doc, 2, 5)
    n = len(doc)
    if code == TOOL_USE and n >= 3:
        use = _new(ToolUseBlock)
        _U_ID(use, _str(doc[1]))
        _U_NAME(use, _str(doc[2]))
        _U_INPUT(use, _dict(doc[3], check) if n > 3 else {})
        _U_STATE(use, _state(USE_STATES, doc[4]) if n > 4 else "requested")
        _U_TYPE(use, "tool_use")
        return use
    if code == TOOL_RESULT and n >= 4:
        result = _new(ToolResultBlock)
        _R_ID(result, _str(doc[1]))
        _R_NAME(result, _str(doc[2]))
        _R_OUTPUT(result, _outputs(doc[3]))
        _R_STATE(result, _state(RESULT_STATES, doc[4]) if n > 4 else "success")
        _R_TYPE(result, "tool_result")
        return result
    if code == THINKING and n == 2:
        block = _new(ThinkingBlock)
        _K_THINKING(block, _str(doc[1]))
        _K_TYPE(block, "thinking")
        return block
    if code == IMAGE or code == DATA:
        return _output(doc)
    raise _Bad(f"unknown block code {code!r} of {n} elements")


_LAST = frozenset("AQgw")  # 16 bytes in 22 characters: the last one carries 4 zero bits


def _msg_id(value: Any) -> str:
    if type(value) is str:
        if len(value) != 22 or value[21] not in _LAST:
            raise _Bad("a packed id must be 22 canonical base64 characters")
        try:
            return _a2b(value + "==", strict_mode=True).hex()
        except (binascii.Error, ValueError):
            raise _Bad("a packed id must be 22 canonical base64 characters") from None
    if type(value) is list and len(value) == 1 and type(value[0]) is str:
        return value[0]
    raise _Bad("an id must be a packed id or a one-element array holding the id")


def _content(body: Any, check: Check) -> tuple[Any, ...]:
    if type(body) is str:
        return (_text(body),)
    if type(body) is not list:
        raise _Bad("content must be a string or an array")
    try:
        return tuple([_block(b, check) for b in body])
    except _Bad:
        for i, b in enumerate(body):
            try:
                _block(b, check)
            except _Bad as exc:
                raise _Bad(f"[1][{i}]: {exc}") from None
        raise


def compact_msg(doc: Any, check: Check, where: str = "message") -> Msg:
    """A parsed format-2 document to a ``Msg``; else ``InvalidState`` saying where."""
    try:
        return _compact_msg(doc, check)
    except _Bad as exc:
        raise InvalidState(f"invalid stored {where}: {exc}") from None


def _compact_msg(doc: Any, check: Check) -> Msg:
    if type(doc) is not list or not 4 <= (n := len(doc)) <= 6:
        raise _Bad("a message must be an array of 4-6 elements")
    role = doc[0]
    if type(role) is not int or not 0 <= role < 4:
        raise _Bad(f"[0]: unknown role code {role!r}")
    body = doc[1]
    blocks: tuple[Any, ...]
    if type(body) is str:  # the common cases inline: one text block,
        only = _new(TextBlock)
        _T_TEXT(only, body)
        _T_TYPE(only, "text")
        blocks = (only,)
    elif (  # ... or one tool use with input, or one tool result with one text
        type(body) is list
        and len(body) == 1
        and type(one := body[0]) is list
        and len(one) == 4
        and type(code := one[0]) is int
        and type(block_id := one[1]) is str
        and type(block_name := one[2]) is str
        and (
            (code == TOOL_USE and type(arg := one[3]) is dict)
            or (code == TOOL_RESULT and type(arg := one[3]) is str)
        )
    ):
        if type(arg) is dict:  # a tool use (the test above paired the code and the type)
            for v in arg.values():
                if type(v) is dict or type(v) is list:
                    check(arg)
                    break
            use = _new(ToolUseBlock)
            _U_ID(use, block_id)
            _U_NAME(use, block_name)
            _U_INPUT(use, arg)
            _U_STATE(use, "requested")
            _U_TYPE(use, "tool_use")
            blocks = (use,)
        else:
            text = _new(TextBlock)
            _T_TEXT(text, arg)
            _T_TYPE(text, "text")
            result = _new(ToolResultBlock)
            _R_ID(result, block_id)
            _R_NAME(result, block_name)
            _R_OUTPUT(result, (text,))
            _R_STATE(result, "success")
            _R_TYPE(result, "tool_result")
            blocks = (result,)
    else:
        blocks = _content(body, check)
    ts = doc[3]
    if type(ts) is not float:
        if type(ts) is not int:
            raise _Bad(f"[3]: a timestamp must be a number, got {type(ts).__name__}")
        ts = float(ts)
    packed = doc[2]
    try:
        if type(packed) is str and len(packed) == 22 and packed[21] in _LAST:
            msg_id = _a2b(packed + "==", strict_mode=True).hex()  # the common case inline
        else:
            msg_id = _msg_id(packed)
    except (_Bad, binascii.Error) as exc:
        raise _Bad(f"[2]: {_msg_id_error(exc)}") from None
    metadata = {}
    name = None
    if n > 4:
        metadata = doc[4]
        if type(metadata) is not dict:
            raise _Bad(f"[4] (metadata): expected an object, got {type(metadata).__name__}")
        for v in metadata.values():  # _free, inline
            if type(v) is dict or type(v) is list:
                check(metadata)
                break
        if n > 5 and type(name := doc[5]) is not str:
            raise _Bad(f"[5] (name): expected a string, got {type(name).__name__}")
    msg = _new(Msg)
    _M_ROLE(msg, ROLES[role])
    _M_CONTENT(msg, blocks)
    _M_NAME(msg, name)
    _M_ID(msg, msg_id)
    _M_META(msg, metadata)
    _M_TS(msg, ts)
    return msg


def _msg_id_error(exc: Exception) -> str:
    return (
        str(exc) if isinstance(exc, _Bad) else "a packed id must be 22 canonical base64 characters"
    )
