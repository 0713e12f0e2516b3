"""Isolation scopes: which directory under the workspace root a call's (user_id, session_id)
works in.

    shared    <root>/                                   every user and session
    user      <root>/users/<user>/                      one per user_id
    session   <root>/sessions/<user>/<session>/         one per (user_id, session_id)

Ids go through the stores' injective encoding (``hookagent.store.ids.encode_id``: only
``[a-z0-9_-~]``, never ``.``, ``..`` or ``/``), and an encoded id longer than ``CHUNK``
characters is cut into names ``<chunk>+`` ... ``<last>`` (``+`` never appears in an encoded
id). The names of one id therefore end at the first name without ``+``: the sequence is
prefix-free, so no call's root is, or contains, another's.
"""

from __future__ import annotations

import functools
from typing import Literal

from hookagent.store.ids import check_id, encode_id

Scope = Literal["shared", "user", "session"]
SCOPES: tuple[Scope, ...] = ("shared", "user", "session")
USERS_DIR = "users"
SESSIONS_DIR = "sessions"
CHUNK = 240
"""Characters per name of an encoded id (plus ``+``: 241 <= 255 bytes)."""
MORE = "+"


@functools.lru_cache(maxsize=4096)
def id_names(value: str) -> tuple[str, ...]:
    """The directory names of one id (one name unless its encoded form is long)."""
    enc = encode_id(value)
    if len(enc) <= CHUNK:
        return (enc,)
    cut = [enc[i : i + CHUNK] for i in range(0, len(enc), CHUNK)]
    return (*[c + MORE for c in cut[:-1]], cut[-1])


def scope_names(scope: Scope, user_id: str, session_id: str) -> tuple[str, ...]:
    """The names from the workspace root to the directory of this scope and identity.

    ``check_id`` refuses what the stores refuse (non-str, NUL, over-long, lone surrogates),
    so a workspace never exists for an identity that no state slot could have.
    """
    if scope == "shared":
        return ()
    check_id(user_id, "user_id", allow_empty=True)
    if scope == "user":
        return (USERS_DIR, *id_names(user_id))
    if scope == "session":
        check_id(session_id, "session_id")
        return (SESSIONS_DIR, *id_names(user_id), *id_names(session_id))
    raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
