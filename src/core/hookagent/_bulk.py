"""The cold load's bulk decode: many format-2 records to ``Msg`` in one tight loop.

A cold load decodes thousands of records, nearly all of four shapes (a text, one tool use,
one tool result with one text, a text with metadata). This loop takes exactly those shapes
inline and hands every other record to ``_compact._compact_msg``, the strict decoder, which
accepts it or raises; so this path accepts a subset of what that one does, never more, and
builds equal values (``tests/test_codec_bulk.py`` holds that).

The frozen classes' values are built through mutable *twins*: a subclass with no slots of
its own and ``object``'s ``__setattr__``, so each field is a plain slot store (a specialised
bytecode) instead of a call of the slot descriptor's ``__set__`` (a method-wrapper call with
an argument tuple: a third of the decode before). The value's class is then set to the real
class, which CPython allows because the twin adds nothing to the layout. So every value is
exactly a ``Msg`` (or block) when it leaves here, frozen as any other; the twins never do.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterable
from typing import Any

from orjson import loads as _loads

from ._compact import _LAST, ROLES, TOOL_RESULT, TOOL_USE, _Bad, _compact_msg
from ._fastmsg import check_bypass_is_sound
from .messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock

Check = Callable[[Any], None]

_new = object.__new__
_a2b = binascii.a2b_base64
_Error = binascii.Error


def _twin(cls: type[Any]) -> type[Any]:
    """A subclass of ``cls`` whose fields can be set while it is built (see the docstring)."""
    twin = type(
        f"_Building{cls.__name__}",
        (cls,),
        {
            "__slots__": (),
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__module__": __name__,
        },
    )
    probe: Any = _new(twin)
    probe.__class__ = cls  # refused at import if the layouts ever stop matching
    return twin


check_bypass_is_sound()  # values are built without __init__: only sound for plain classes
_MsgW = _twin(Msg)
_TextW = _twin(TextBlock)
_UseW = _twin(ToolUseBlock)
_ResultW = _twin(ToolResultBlock)


def bulk_records(
    items: Iterable[Any],
    check: Check,
    other: Callable[[Any, Check], Msg],
    limit: int,
    *,
    parsed: bool = False,
) -> list[Msg]:
    """Decode stored records one after the other (a cold load): parse one, build it, let
    its parse go. A parsed value that is not an array goes to ``other`` (format 1).
    ``parsed``: the items are parsed already (the records a session log's commits hold,
    parsed with their commit), so neither parsed nor size-checked here again.

    One ``orjson.loads`` per record costs about what one parse of a joined chunk does, and
    nothing has to prove where one record ends: no record can borrow its neighbour's bytes.
    Any failure is a ``ValueError`` (or ``other``'s own error): the caller then decodes the
    records one by one, to say which is wrong and how.
    """
    out: list[Msg] = []
    append = out.append
    quarter = limit >> 2
    user, assistant, system, tool = ROLES
    try:
        for raw in items:
            if parsed:
                doc = raw
            else:
                if len(raw) > quarter and _size(raw) > limit:
                    raise ValueError("a record is over the size limit")
                doc = _loads(raw)
            if type(doc) is not list:
                append(other(doc, check))
                continue
            n = len(doc)
            if n == 4:
                code, body, packed, ts = doc
                metadata: Any = {}
            elif n == 5 and type(doc[4]) is dict:
                code, body, packed, ts, metadata = doc
                for v in metadata.values():  # _free, inline
                    if type(v) is dict or type(v) is list:
                        check(metadata)
                        break
            else:
                append(_compact_msg(doc, check))
                continue
            if (
                type(code) is not int
                or type(packed) is not str
                or len(packed) != 22
                or packed[21] not in _LAST
            ):
                append(_compact_msg(doc, check))
                continue
            if code == 1:
                role = assistant
            elif code == 0:
                role = user
            elif code == 3:
                role = tool
            elif code == 2:
                role = system
            else:
                append(_compact_msg(doc, check))  # raises: an unknown role code
                continue
            if type(ts) is not float:
                if type(ts) is not int:
                    append(_compact_msg(doc, check))  # raises: not a number
                    continue
                ts = float(ts)
            if type(body) is str:  # one text block
                text = _new(_TextW)
                text.text = body
                text.type = "text"
                text.__class__ = TextBlock
                blocks: tuple[Any, ...] = (text,)
            elif (  # one tool use with input, or one tool result with one text
                type(body) is list
                and len(body) == 1
                and type(one := body[0]) is list
                and len(one) == 4
                and type(one[0]) is int
                and type(one[1]) is str
                and type(one[2]) is str
            ):
                block_code, block_id, block_name, arg = one
                if block_code == TOOL_USE and type(arg) is dict:
                    for v in arg.values():  # _free, inline
                        if type(v) is dict or type(v) is list:
                            check(arg)
                            break
                    use = _new(_UseW)
                    use.id = block_id
                    use.name = block_name
                    use.input = arg
                    use.state = "requested"
                    use.type = "tool_use"
                    use.__class__ = ToolUseBlock
                    blocks = (use,)
                elif block_code == TOOL_RESULT and type(arg) is str:
                    text = _new(_TextW)
                    text.text = arg
                    text.type = "text"
                    text.__class__ = TextBlock
                    result = _new(_ResultW)
                    result.id = block_id
                    result.name = block_name
                    result.output = (text,)
                    result.state = "success"
                    result.type = "tool_result"
                    result.__class__ = ToolResultBlock
                    blocks = (result,)
                else:
                    append(_compact_msg(doc, check))
                    continue
            else:
                append(_compact_msg(doc, check))
                continue
            msg = _new(_MsgW)
            msg.role = role
            msg.content = blocks
            msg.name = None
            msg.id = _a2b(packed + "==", strict_mode=True).hex()
            msg.metadata = metadata
            msg.timestamp = ts
            msg.__class__ = Msg
            append(msg)
    except (_Bad, _Error) as exc:
        raise ValueError(str(exc)) from None
    return out


def _size(raw: Any) -> int:
    return len(raw.encode("utf-8")) if type(raw) is str else len(raw)
