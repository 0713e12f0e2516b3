"""Identifier rules shared by every store, and one injective, reversible, path-safe encoding.

Ids are user data: any str of 1..MAX_ID_LENGTH characters without NUL and encodable as UTF-8
is accepted (the empty user_id is the anonymous partition). Stores must never splice a raw id
into a path, key or query text: ``encode_id`` gives a form made only of ``[a-z0-9_-]`` and
``~XX`` escapes, so that it contains no separator, dot, glob or hash-tag character, cannot
collide under case folding or Unicode normalisation, and decodes back exactly.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import (
    CorruptState,
    InvalidIdentifier,
    InvalidStoreArgument,
    StateSlotMismatch,
    UnsupportedSchemaVersion,
)

if TYPE_CHECKING:
    from ..state import AgentState

MAX_ID_LENGTH = 256
"""Longest accepted id, in characters."""

_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPE = "~"
_EMPTY = "~"  # the anonymous user's encoded form: a lone "~" never appears otherwise
_DECODE = re.compile(r"~([0-9a-f]{2})")


_CHECKED: dict[str, None] = {}
"""Non-empty ids that passed ``check_id`` (exact ``str`` only): a call checks its user and
session ids about eight times (kernel, load, save), the same strings each time."""
_CHECKED_MAX = 4096


def check_id(value: object, what: str = "session_id", *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a usable id, else raise ``InvalidIdentifier`` saying why."""
    if type(value) is str and value in _CHECKED:  # the rules hold for it whatever `what` is
        return value
    if not isinstance(value, str):
        raise InvalidIdentifier(f"{what} must be a str, got {type(value).__name__}")
    if not value and not allow_empty:
        raise InvalidIdentifier(f"{what} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdentifier(f"{what} is {len(value)} characters, over {MAX_ID_LENGTH}")
    if "\x00" in value:
        raise InvalidIdentifier(f"{what} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidIdentifier(f"{what} is not valid Unicode (lone surrogate)") from None
    if value and type(value) is str:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[value] = None
    return value


def check_slot(user_id: object, session_id: object, key: object = "agent_state") -> None:
    if (
        type(session_id) is str
        and type(key) is str
        and type(user_id) is str
        and session_id in _CHECKED
        and key in _CHECKED
        and (not user_id or user_id in _CHECKED)
    ):
        return  # all three passed check_id before (a store checks a call's slot twice)
    check_id(user_id, "user_id", allow_empty=True)
    check_id(session_id, "session_id")
    check_id(key, "key")


def slot_name(user_id: str, session_id: str, key: str = "agent_state") -> str:
    """How every store error names a slot: ``user_id='a' session_id='s' key='agent_state'``."""
    return f"user_id={user_id!r} session_id={session_id!r} key={key!r}"


def check_state_slot(
    state: AgentState, user_id: str, session_id: str, key: str = "agent_state"
) -> None:
    """A save's state must name the slot it is saved to (``StateSlotMismatch`` otherwise).

    Every store calls this in ``save_if_version`` before anything is written.
    """
    if state.user_id != user_id or state.session_id != session_id:
        raise StateSlotMismatch(
            f"cannot save a state of user_id={state.user_id!r} session_id={state.session_id!r} "
            f"into {slot_name(user_id, session_id, key)}: re-address it first"
        )


def check_loaded_slot(
    state: AgentState, user_id: str, session_id: str, key: str = "agent_state"
) -> AgentState:
    """A loaded state that names another slot than its own is ``CorruptState`` (copied bytes)."""
    if state.user_id != user_id or state.session_id != session_id:
        raise CorruptState(
            f"{slot_name(user_id, session_id, key)} holds a state of "
            f"user_id={state.user_id!r} session_id={state.session_id!r}"
        )
    return state


def check_schema_writable(
    stored_schema_version: object, user_id: str, session_id: str, key: str = "agent_state"
) -> None:
    """Refuse to overwrite a slot written by a newer schema than this hookagent's.

    Stores call this with the stored head's ``schema_version`` before any write, also for
    ``UNCONDITIONAL`` saves; a missing or non-int value is left to the store's own checks.
    """
    from ..state import SCHEMA_VERSION

    if type(stored_schema_version) is int and stored_schema_version > SCHEMA_VERSION:
        raise UnsupportedSchemaVersion(
            f"{slot_name(user_id, session_id, key)} was written at schema_version "
            f"{stored_schema_version}; this hookagent writes {SCHEMA_VERSION} and never "
            "overwrites a newer schema"
        )


def check_expected_version(expected_version: object) -> None:
    """``save_if_version``'s expected version: an int >= 0 or ``UNCONDITIONAL``."""
    if type(expected_version) is int and expected_version >= 0:  # every save: no import
        return
    from .base import UNCONDITIONAL

    if expected_version is not UNCONDITIONAL and (
        type(expected_version) is not int or expected_version < 0
    ):
        raise InvalidStoreArgument(
            f"expected_version must be an int >= 0 or UNCONDITIONAL, got {expected_version!r}"
        )


MAX_PAGE_LIMIT = 10_000
"""Largest page ``list_session_ids`` serves; walk more with ``next_cursor``."""


def check_page_limit(limit: object) -> None:
    """``list_session_ids``'s page size: an int in 1..MAX_PAGE_LIMIT."""
    if type(limit) is not int or not 1 <= limit <= MAX_PAGE_LIMIT:
        raise InvalidStoreArgument(f"limit must be an int in 1..{MAX_PAGE_LIMIT}, got {limit!r}")


def check_cursor(cursor: object) -> None:
    """``list_session_ids``'s cursor: None or a str. A page holds the ids after the cursor,
    so a page's ``next_cursor`` gives the next page, and ``""`` (like None) the first."""
    if cursor is not None:
        if not isinstance(cursor, str):
            raise InvalidStoreArgument(f"cursor must be a str or None, got {type(cursor).__name__}")
        check_id(cursor, "cursor", allow_empty=True)


FENCE_EPOCH_LIMIT = 2**53
"""Epochs stay below this, so that every store (Lua's doubles included) compares them exactly."""


def check_fence(fence: object) -> None:
    """``save_if_version``'s fence: None or a ``Fence`` with an int epoch and a str owner."""
    if fence is None:  # every save without a lease: no import
        return
    from .base import Fence

    if (
        not isinstance(fence, Fence)
        or type(fence.epoch) is not int
        or not 0 <= fence.epoch < FENCE_EPOCH_LIMIT
        or not isinstance(fence.owner, str)
    ):
        raise InvalidStoreArgument(
            f"fence must be None or a Fence(epoch: int in [0, 2**53), owner: str), got {fence!r}"
        )
    check_owner(fence.owner)


def check_owner(owner: object) -> str:
    """A lease owner (``Fence.owner``, a gate's owner): an id's rules, the empty str allowed."""
    try:
        return check_id(owner, "fence owner", allow_empty=True)
    except InvalidIdentifier as exc:
        raise InvalidStoreArgument(str(exc)) from None


_ENCODED: dict[str, str] = {}
"""``encode_id`` of recent ids (exact ``str`` only): a store call encodes its user,
session and key ids again on each load and save, a character at a time."""


def encode_id(value: str) -> str:
    """Injective, reversible encoding into ``[a-z0-9_-~]`` (lowercase hex escapes)."""
    if type(value) is str:
        done = _ENCODED.get(value)
        if done is not None:
            return done
    if value == "":
        return _EMPTY
    out: list[str] = []
    for byte in value.encode("utf-8"):
        out.append(chr(byte) if byte in _SAFE else f"{_ESCAPE}{byte:02x}")
    encoded = "".join(out)
    if type(value) is str:
        if len(_ENCODED) >= _CHECKED_MAX:
            _ENCODED.clear()
        _ENCODED[value] = encoded
    return encoded


def decode_id(encoded: str) -> str:
    """Inverse of ``encode_id``; raises ``InvalidIdentifier`` for anything it cannot produce."""
    if encoded == _EMPTY:
        return ""
    raw = bytearray()
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch == _ESCAPE:
            m = _DECODE.match(encoded, i)
            if m is None:
                raise InvalidIdentifier(f"bad escape in encoded id {encoded!r}")
            raw.append(int(m.group(1), 16))
            i += 3
        elif ord(ch) < 128 and ord(ch) in _SAFE:
            raw.append(ord(ch))
            i += 1
        else:
            raise InvalidIdentifier(f"character {ch!r} cannot appear in an encoded id")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidIdentifier(f"encoded id {encoded!r} is not UTF-8") from None
