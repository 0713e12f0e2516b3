"""Where a slot lives: ids to path components, injective, reversible and length-safe.

Each id goes through ``encode_id`` (only ``[a-z0-9_-~]``, no separator and no dot), so an
encoded id can never be ``.``, ``..`` or contain ``/``. An encoded id can reach 3 * 4 * 256 =
3,072 characters, far over the 255-byte file-name limit, so a long one is cut into chunks of
``CHUNK`` characters: every chunk but the last becomes a directory named ``<chunk>+`` and the
last one is the entry itself. ``+`` never appears in an encoded id, so a short id ``x`` and the
first chunk of a long id starting with ``x`` never share a name, and walking the tree back
(strip the ``+``, join, ``decode_id``) gives the id again. Store-private names start with a
dot (``.lock``, ``.fence``, ``.tmp.*``), which no encoded id does.

    <root>/<user>/<session>/<key>/head         the committed head (version, generation, state)
    <root>/<user>/<session>/<key>/h<gen>.log   the history records of one generation
    <root>/<user>/<session>/<key>/.end         where the last acknowledged commit ends (hint)
    <root>/<user>/<session>/<key>/.torn.<gen>.<offset>   damaged bytes a writer dropped (kept)
    <root>/<user>/<session>/.lock              the per-slot flock file
    <root>/<user>/<session>/.fence             the newest fencing epoch seen for the slot
"""

from __future__ import annotations

import functools

from hookagent.store.ids import decode_id, encode_id

CHUNK = 240
"""Characters per path component of an encoded id (plus one ``+``: 241 <= 255 bytes)."""
MORE = "+"
HEAD = "head"
LOCK = ".lock"
FENCE = ".fence"
HINT = ".end"
TMP_PREFIX = ".tmp."
TORN_PREFIX = ".torn."
"""A copy of damaged bytes a writer dropped after the last commit (kept; see ``_keep_torn``)."""
LOG_PREFIX = "h"
LOG_SUFFIX = ".log"


def id_parts(value: str) -> list[str]:
    """The path components of one id (one component unless its encoded form is long)."""
    return list(_id_parts(value))


@functools.lru_cache(maxsize=1024)
def _id_parts(value: str) -> tuple[str, ...]:
    enc = encode_id(value)  # raises for an invalid id (exceptions are not cached)
    if len(enc) <= CHUNK:
        return (enc,)
    cut = [enc[i : i + CHUNK] for i in range(0, len(enc), CHUNK)]
    return (*[c + MORE for c in cut[:-1]], cut[-1])


def parts_to_id(parts: list[str]) -> str | None:
    """Inverse of ``id_parts``; None for names this store would not have produced."""
    if not parts or any(not p.endswith(MORE) for p in parts[:-1]) or parts[-1].endswith(MORE):
        return None
    enc = "".join(p[:-1] for p in parts[:-1]) + parts[-1]
    try:
        value = decode_id(enc)
    except ValueError:
        return None
    return value if id_parts(value) == parts else None  # only canonical layouts count


def slot_parts(user_id: str, session_id: str) -> list[str]:
    return id_parts(user_id) + id_parts(session_id)


def log_name(gen: str) -> str:
    return f"{LOG_PREFIX}{gen}{LOG_SUFFIX}"


def is_log_name(name: str) -> bool:
    return name.startswith(LOG_PREFIX) and name.endswith(LOG_SUFFIX) and name != HEAD


def is_private(name: str) -> bool:
    """Store-private entries (lock, fence, temp files) next to encoded ids."""
    return name.startswith(".")
