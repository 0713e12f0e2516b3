"""The tables: one head row per slot, one row per message, one fence row per session.

Ids are stored as ``encode_id`` forms (``[a-z0-9_-~]`` only): SQLite compares them byte for
byte, so no collation, case folding or Unicode normalisation can make two ids meet.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
"""Stored in ``PRAGMA user_version``; a database written by a newer layout is refused."""

DDL = (
    # the versioned head: every section but the history, and how the history is stored
    """
    CREATE TABLE IF NOT EXISTS heads (
        user_id    TEXT    NOT NULL,
        session_id TEXT    NOT NULL,
        key        TEXT    NOT NULL,
        version    INTEGER NOT NULL,
        generation TEXT    NOT NULL,
        msg_count  INTEGER NOT NULL,
        head       BLOB    NOT NULL,
        PRIMARY KEY (user_id, session_id, key)
    ) WITHOUT ROWID
    """,
    # the history, one encoded message per row, seq 0..msg_count-1
    """
    CREATE TABLE IF NOT EXISTS messages (
        user_id    TEXT    NOT NULL,
        session_id TEXT    NOT NULL,
        key        TEXT    NOT NULL,
        seq        INTEGER NOT NULL,
        body       BLOB    NOT NULL,
        PRIMARY KEY (user_id, session_id, key, seq)
    ) WITHOUT ROWID
    """,
    # the newest lease epoch seen per session (fencing)
    """
    CREATE TABLE IF NOT EXISTS fences (
        user_id    TEXT    NOT NULL,
        session_id TEXT    NOT NULL,
        epoch      INTEGER NOT NULL,
        owner      TEXT    NOT NULL,
        PRIMARY KEY (user_id, session_id)
    ) WITHOUT ROWID
    """,
)

# Every statement is a constant: ids and values are only ever bound as parameters (?).
SELECT_HEAD = (
    "SELECT version, generation, msg_count, head FROM heads "
    "WHERE user_id = ? AND session_id = ? AND key = ?"
)
SELECT_TAIL = (
    "SELECT seq, body FROM messages "
    "WHERE user_id = ? AND session_id = ? AND key = ? AND seq >= ? ORDER BY seq"
)
SELECT_EXISTS = "SELECT 1 FROM heads WHERE user_id = ? AND session_id = ? AND key = ?"
SELECT_SESSIONS = (
    "SELECT DISTINCT session_id FROM heads WHERE user_id = ? AND session_id > ? "
    "ORDER BY session_id LIMIT ?"
)
INSERT_HEAD = (
    "INSERT INTO heads (user_id, session_id, key, version, generation, msg_count, head) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_HEAD = (
    "UPDATE heads SET version = ?, generation = ?, msg_count = ?, head = ? "
    "WHERE user_id = ? AND session_id = ? AND key = ? AND version = ?"
)
INSERT_MESSAGE = "INSERT INTO messages (user_id, session_id, key, seq, body) VALUES (?, ?, ?, ?, ?)"
DELETE_MESSAGES_FROM = (
    "DELETE FROM messages WHERE user_id = ? AND session_id = ? AND key = ? AND seq >= ?"
)
DELETE_HEAD = "DELETE FROM heads WHERE user_id = ? AND session_id = ? AND key = ?"
DELETE_MESSAGES = "DELETE FROM messages WHERE user_id = ? AND session_id = ? AND key = ?"
DELETE_SESSION_HEADS = "DELETE FROM heads WHERE user_id = ? AND session_id = ?"
DELETE_SESSION_MESSAGES = "DELETE FROM messages WHERE user_id = ? AND session_id = ?"
SELECT_FENCE = "SELECT epoch, owner FROM fences WHERE user_id = ? AND session_id = ?"
UPSERT_FENCE = (
    "INSERT INTO fences (user_id, session_id, epoch, owner) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (user_id, session_id) DO UPDATE SET epoch = excluded.epoch, "
    "owner = excluded.owner"
)
