"""Decoding a big state without one parse of the whole document (G16), and the pause of
the cyclic collector that bulk decodes take."""

from __future__ import annotations

import gc
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from ._fastmsg import Mismatch, fast_msg
from .messages import Msg
from .state import SCHEMA_VERSION, AgentState, History


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk decode.

    Decoding thousands of messages allocates tens of thousands of objects, which triggers
    full collections over the whole heap (all of SQLAlchemy, say): that doubles a cold load.
    Decoded messages hold no reference cycles, so nothing is lost by collecting later.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


SPLIT_FROM = 256 * 1024
_SEP = b'},{"role":'
_CONTEXT = b'"context":['
_AFTER = b'}],"tool_context":'  # what follows the history in the codec's field order
_AFTER_V0 = (
    b'}],"permission_context":'  # ... and in what kernels before plugin-owned sections wrote
)


def decode_split(
    data: bytes,
    check_json: Callable[[Any], None],
    build: Callable[..., AgentState],
    chunk_size: int,
) -> AgentState | None:
    """A big state in the form the codec writes, decoded a chunk of messages at a time.

    One parse of the whole document makes orjson hold a worst-case buffer of ~9x the input
    next to the parsed objects (17x in all at the 8 MiB cap). Here the head and each chunk
    of messages are parsed apart (under 6x). The splits are proven, not trusted: every
    chunk must parse as an array of whole values (a split inside a message leaves brackets
    open), and the head, with the history replaced by a random marker, must parse with that marker as its top-level ``context``. Anything else returns None
    and the caller parses the whole document (which also explains any error).
    """
    start = data.find(_CONTEXT)
    if start < 0:
        return None
    marker = f"hookagent-history-{secrets.token_hex(16)}"  # unguessable: in no document
    body = start + len(_CONTEXT)
    parts = data[body:].split(_SEP)
    last = parts[-1]
    end = last.find(_AFTER)
    if end < 0:
        end = last.find(_AFTER_V0)
    if end < 0 or data[body : body + 1] != b"{":
        return None
    rest = last[end + 2 :]
    parts[-1] = last[: end + 1]
    head_doc = None
    with gc_paused():
        try:
            head_doc = orjson.loads(data[:start] + b'"context":"' + marker.encode() + b'"' + rest)
            if (
                type(head_doc) is not dict
                or head_doc.get("context") != marker
                or head_doc.get("schema_version") != SCHEMA_VERSION
                or type(head_doc.get("schema_version")) is not int
            ):
                return None
            messages: list[Msg] = []
            for at in range(0, len(parts), chunk_size):
                chunk = _SEP.join(parts[at : at + chunk_size])
                chunk = (b'[{"role":' if at else b"[") + chunk
                chunk += b"]" if at + chunk_size >= len(parts) else b"}]"
                messages += [fast_msg(doc, check_json) for doc in orjson.loads(chunk)]
        except (orjson.JSONDecodeError, Mismatch):
            return None
    del parts
    state = build(head_doc, context=messages)
    state.context = History(messages)
    return state
