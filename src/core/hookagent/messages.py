"""Messages and their content blocks: frozen values that are safe to share between calls.

Each block carries a ``type`` discriminator that is also its JSON tag; the codec dispatches
on it and never on anything else found in the data.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

import attrs

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]
ToolUseState: TypeAlias = Literal["requested", "streaming"]
ToolResultState: TypeAlias = Literal["success", "error", "interrupted", "denied"]


_ID_BATCH = 64
_ids: list[str] = []
"""Ids drawn ahead (``new_id`` pops one): one ``os.urandom`` read per 64 ids, not per id."""


def _draw_ids() -> list[str]:
    raw = os.urandom(16 * _ID_BATCH)
    out = []
    for i in range(0, 16 * _ID_BATCH, 16):
        one = bytearray(raw[i : i + 16])
        one[6] = (one[6] & 0x0F) | 0x40  # version 4
        one[8] = (one[8] & 0x3F) | 0x80  # RFC 4122 variant
        out.append(one.hex())
    return out


def new_id() -> str:
    """A fresh 32-character lowercase hex id: a random (version 4) UUID's hex form.

    From ``os.urandom``, drawn 64 at a time (a call makes about six ids; ``uuid.uuid4()``
    costs 4x more and a read each). ``list.pop`` is atomic, so two threads never get the
    same id; a forked child drops the parent's drawn ids (it would repeat them).
    """
    try:
        return _ids.pop()
    except IndexError:
        _ids.extend(_draw_ids())
        return _ids.pop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.clear)


@attrs.frozen
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@attrs.frozen
class ThinkingBlock:
    thinking: str
    type: Literal["thinking"] = "thinking"


@attrs.frozen
class ImageBlock:
    """An image by reference (URL or storage URI); bytes never live in the state."""

    url: str
    media_type: str | None = None
    type: Literal["image"] = "image"


@attrs.frozen
class DataBlock:
    """Any other payload by reference (file, blob, dataset)."""

    url: str
    media_type: str | None = None
    name: str | None = None
    type: Literal["data"] = "data"


OutputBlock: TypeAlias = TextBlock | ImageBlock | DataBlock


@attrs.frozen
class ToolUseBlock:
    """The model asks for a tool; ``id`` ties it to exactly one ``ToolResultBlock``."""

    id: str
    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    state: ToolUseState = "requested"
    type: Literal["tool_use"] = "tool_use"


@attrs.frozen
class ToolResultBlock:
    """The outcome of the tool_use with the same ``id``."""

    id: str
    name: str
    output: tuple[OutputBlock, ...] = ()
    state: ToolResultState = "success"
    type: Literal["tool_result"] = "tool_result"

    @property
    def text(self) -> str:
        output = self.output
        if len(output) == 1 and type(output[0]) is TextBlock:  # the common case: no join
            return output[0].text
        return "".join(b.text for b in output if isinstance(b, TextBlock))


ContentBlock: TypeAlias = (
    TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock | DataBlock
)

BLOCK_TYPES: Mapping[str, type[Any]] = {
    "text": TextBlock,
    "thinking": ThinkingBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
    "image": ImageBlock,
    "data": DataBlock,
}


def _blocks(value: str | Iterable[ContentBlock]) -> tuple[ContentBlock, ...]:
    if isinstance(value, str):
        return (TextBlock(value),)
    return tuple(value)


@attrs.frozen
class Msg:
    """One message of a conversation."""

    role: Role
    content: tuple[ContentBlock, ...] = attrs.field(converter=_blocks, default=())
    name: str | None = None
    id: str = attrs.field(factory=new_id)
    metadata: dict[str, Any] = attrs.field(factory=dict)
    timestamp: float = attrs.field(factory=time.time)

    # ---- convenient constructors
    @classmethod
    def user(cls, content: str | Iterable[ContentBlock], **kw: Any) -> Msg:
        return cls("user", content, **kw)

    @classmethod
    def assistant(cls, content: str | Iterable[ContentBlock], **kw: Any) -> Msg:
        return cls("assistant", content, **kw)

    @classmethod
    def system(cls, content: str | Iterable[ContentBlock], **kw: Any) -> Msg:
        return cls("system", content, **kw)

    # ---- views
    @property
    def text(self) -> str:
        """The concatenated text blocks (what a human reads)."""
        content = self.content
        if len(content) == 1 and type(content[0]) is TextBlock:  # the common case: no join
            return content[0].text
        return "".join(b.text for b in content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        content = self.content
        if len(content) == 1:  # the common case (read several times a call): no generator
            return content if isinstance(content[0], ToolUseBlock) else ()  # type: ignore[return-value]
        return tuple(b for b in content if isinstance(b, ToolUseBlock))

    @property
    def tool_results(self) -> tuple[ToolResultBlock, ...]:
        content = self.content
        if len(content) == 1:  # the common case: no generator
            return content if isinstance(content[0], ToolResultBlock) else ()  # type: ignore[return-value]
        return tuple(b for b in content if isinstance(b, ToolResultBlock))
