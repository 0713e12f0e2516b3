"""The key layout: every key starts with the prefix, ids are encoded, one hash tag per slot.

Why: a raw id spliced into a key can collide (``a:b``), glob (``*``) or move the cluster hash
tag (``{``). ``encode_id`` output holds none of ``{ } : * ? [``, so every key below parses
back to exactly one (prefix, user, session, key name), and every key of one session shares
the hash tag ``{<user>:<session>}`` so a Lua script may touch them all on one cluster node.
"""

from __future__ import annotations

import re

import attrs
from hookagent.errors import StoreConfigurationError
from hookagent.store.ids import encode_id

DEFAULT_PREFIX = "hookagent"
_PREFIX = re.compile(r"[A-Za-z0-9_.\-:]{1,64}")


def check_prefix(prefix: object) -> str:
    """A prefix is plain text: no hash-tag braces, no glob characters, at most 64 chars."""
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise StoreConfigurationError(
            f"key prefix must match [A-Za-z0-9_.-:]{{1,64}}, got {prefix!r}"
        )
    return prefix


@attrs.frozen
class SessionKeys:
    """Names of the keys of one (user, session); all share one hash tag."""

    base: str  # "<prefix>:{<user>:<session>}"

    def head(self, kname: str) -> str:
        """Hash: v (version), g (generation), n (count), c (chain), i, w, d (sections)."""
        return f"{self.base}:h:{kname}"

    def messages(self, kname: str) -> str:
        """List of encoded messages, oldest first."""
        return f"{self.base}:m:{kname}"

    @property
    def keyset(self) -> str:
        """Set of the encoded key names present: the session exists iff this key exists."""
        return f"{self.base}:keys"

    @property
    def meta(self) -> str:
        """Hash of counters that outlive delete and TTL: epochs, incarnations, generations."""
        return f"{self.base}:meta"

    @property
    def lease(self) -> str:
        """Hash owner/epoch of the distributed gate's lease (expires by PEXPIRE)."""
        return f"{self.base}:lease"

    @property
    def queue(self) -> str:
        """Sorted set of waiting owners scored by ticket (FIFO)."""
        return f"{self.base}:queue"

    @property
    def queue_deadlines(self) -> str:
        """Hash waiter -> deadline (ms, server clock) after which a silent waiter is dropped."""
        return f"{self.base}:qdl"

    # the session log (sessionlog.py): its own keys, same hash tag
    def log_keys(self) -> list[str]:
        """Head, seq index, bytes, commit records, batch index, sealed owners: the order
        the log's scripts take them in."""
        return [f"{self.base}:log:{part}" for part in ("h", "i", "c", "m", "b", "x")]


@attrs.frozen
class KeyLayout:
    prefix: str = DEFAULT_PREFIX

    def __attrs_post_init__(self) -> None:
        check_prefix(self.prefix)

    def session(self, user_id: str, session_id: str) -> SessionKeys:
        return SessionKeys(f"{self.prefix}:{{{encode_id(user_id)}:{encode_id(session_id)}}}")

    def user_index(self, user_id: str) -> str:
        """Sorted set (score 0, lexicographic) of a user's encoded session ids."""
        return f"{self.prefix}:{{{encode_id(user_id)}}}:sessions"

    def log_index(self, user_id: str) -> str:
        """Sorted set (score 0, lexicographic) of a user's encoded session ids with a log."""
        return f"{self.prefix}:{{{encode_id(user_id)}}}:logs"

    def match_all(self) -> str:
        """A SCAN pattern for every key of this prefix (tests, cleanup); no id is spliced in."""
        return f"{_glob_escape(self.prefix)}:*"


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)
