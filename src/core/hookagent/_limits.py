"""The codec's limits: sizes checked before parsing and before the output is allocated,
nesting checked without recursion."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from .errors import CorruptState, InvalidState, StateTooLarge

MAX_STATE_BYTES = 8 * 1024 * 1024
"""Largest encoded state accepted (before parse and before write)."""
MAX_MESSAGE_BYTES = 1024 * 1024
"""Largest encoded single message accepted."""
MAX_DEPTH = 64
"""Deepest nesting of JSON containers accepted anywhere in a stored document."""


def check_depth(value: Any, limit: int = MAX_DEPTH, *, where: str = "document") -> None:
    """Iteratively check container nesting (no recursion, so no RecursionError)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            raise StateTooLarge(f"{where} nests deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)


def _parse(data: bytes | str, *, limit: int, what: str) -> Any:
    if isinstance(data, str):
        if len(data) > limit:  # before encoding: each character is at least one byte
            raise StateTooLarge(f"{what} is over {len(data)} bytes, over the limit of {limit}")
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CorruptState(f"{what} is not valid UTF-8 text: {exc.reason}") from None
    elif not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidState(f"{what} must be JSON text or bytes, got {type(data).__name__}")
    if len(data) > limit:
        raise StateTooLarge(f"{what} is {len(data)} bytes, over the limit of {limit}")
    if not bytes(data[:4]).strip():
        raise CorruptState(f"{what} is empty")
    try:
        return orjson.loads(data)  # orjson itself refuses nesting deeper than 1,024
    except orjson.JSONDecodeError as exc:
        raise CorruptState(f"{what} is not valid JSON: {exc}") from None


def _min_size(value: Any, limit: int) -> int:
    """A lower bound of ``value``'s encoded size, walked without encoding (so a payload far
    over a limit is refused before the big output buffer is allocated); stops past ``limit``.

    Each character of a str encodes to at least one byte, each scalar to at least one, and a
    container of n items has at least n + 1 bytes of brackets and separators."""
    total = 0
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str:
            total += len(node) + 2
        elif kind is dict:
            total += len(node) + 1
            for k, v in node.items():
                total += len(k) + 2 if type(k) is str else 1
                stack.append(v)
        elif kind is list or kind is tuple:
            total += len(node) + 1
            stack.extend(node)
        else:
            total += 1
        if total > limit:
            break
    return total


def _dump(value: Any, *, limit: int, what: str, bound: int | None = None) -> bytes:
    """Encode ``value``, refusing it past ``limit``. ``bound`` is a lower bound of its size
    the caller already knows (a message's text); without one the value is walked first."""
    if bound is None:
        bound = _min_size(value, limit)
    if bound > limit:
        raise StateTooLarge(f"{what} is over {bound} bytes, over the limit of {limit}")
    try:
        out = orjson.dumps(value)
    except TypeError as exc:
        raise InvalidState(f"{what} is not JSON-serialisable: {exc}") from None
    if len(out) > limit:
        raise StateTooLarge(f"{what} is {len(out)} bytes, over the limit of {limit}")
    return out
