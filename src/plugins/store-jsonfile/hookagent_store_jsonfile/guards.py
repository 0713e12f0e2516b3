"""Checks every save form shares (local disk and fsspec): the fence rule and a newer schema.

Both run under the store's lock, on what the store holds, before anything is written.
"""

from __future__ import annotations

from hookagent.codec import loads
from hookagent.errors import CorruptState, Fenced
from hookagent.state import SCHEMA_VERSION
from hookagent.store.base import Fence
from hookagent.store.ids import check_schema_writable

_OWN_SCHEMA = b',"schema_version":%d}' % SCHEMA_VERSION
"""How the codec ends a head of this schema with no extension sections (the common case)."""


def stored_schema(state: bytes, where: str) -> object:
    """The ``schema_version`` a stored state head says (its bytes, ``encode_head``'s form)."""
    if state.endswith(_OWN_SCHEMA):
        return SCHEMA_VERSION  # (an extension section after it would end otherwise)
    doc = loads(state, what=f"{where} state head")
    if not isinstance(doc, dict):
        raise CorruptState(f"{where}: the stored state head is not an object")
    return doc.get("schema_version")


def check_writable(state: bytes, ck: tuple[str, str, str], where: str) -> None:
    """``UnsupportedSchemaVersion`` if the stored head was written by a newer schema."""
    check_schema_writable(stored_schema(state, where), *ck)


def fence_is_newer(fence: Fence, recorded: tuple[int, str | None] | None, where: str) -> bool:
    """The one fence rule: ``Fenced`` for an epoch older than the one recorded, or the same
    epoch held by another owner; True when ``fence`` is newer (the caller records it).

    ``recorded`` is (epoch, owner), owner None for a record written before owners were kept
    (then the same epoch is accepted whoever holds it); None when nothing is recorded.
    """
    if recorded is None:
        return True
    epoch, owner = recorded
    if fence.epoch < epoch or (fence.epoch == epoch and owner is not None and fence.owner != owner):
        raise Fenced(
            f"lease epoch {fence.epoch} of {fence.owner!r} is stale: epoch {epoch} of "
            f"{owner!r} holds {where}"
        )
    return fence.epoch > epoch
