"""Checks every save form shares (local disk and fsspec): the fence rule and a newer schema.

Both run under the store's lock, on what the store holds, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from hookagent.codec import decode_head, loads
from hookagent.errors import CorruptState, Fenced, HookagentError
from hookagent.history import History
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import Fence
from hookagent.store.ids import check_loaded_slot, check_schema_writable, slot_name

_MEMO: dict[bytes, object] = {}
_MEMO_SLOTS, _MEMO_MAX = 256, 64 * 1024
"""Stored heads already parsed (by content; small ones only), so a save parses its slot's
head once, not at every append."""


def stored_schema(state: bytes, where: str) -> object:
    """The ``schema_version`` a stored state head says (its bytes, ``encode_head``'s form);
    ``CorruptState`` naming the slot if it is not a JSON object (a save never overwrites what
    it cannot read)."""
    known = _MEMO.get(state, _MEMO)
    if known is not _MEMO:
        return known
    doc = loads(state, what=f"{where} stored state head")
    if not isinstance(doc, dict):
        raise CorruptState(f"{where}: the stored state head is not an object")
    schema = doc.get("schema_version")
    if len(state) <= _MEMO_MAX:
        if len(_MEMO) >= _MEMO_SLOTS:
            _MEMO.clear()
        _MEMO[state] = schema
    return schema


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


def decode_loaded(
    state: bytes, msgs: Sequence[Msg], ck: tuple[str, str, str], *, shared: int | None = None
) -> AgentState:
    """The loaded state: the codec's error (bad JSON, a newer schema ...) names the slot, and
    a state naming another slot is ``CorruptState``. ``shared``: ``msgs`` is an append-only
    log whose first ``shared`` items are the history, shared rather than copied."""
    try:
        loaded = decode_head(state, msgs if shared is None else ())
        if shared is not None:
            loaded.context = History.shared(msgs, shared)
    except HookagentError as exc:
        where = slot_name(*ck)
        if exc.args and isinstance(exc.args[0], str) and where not in exc.args[0]:
            exc.args = (f"{where}: {exc.args[0]}", *exc.args[1:])
        raise
    return check_loaded_slot(loaded, *ck)
