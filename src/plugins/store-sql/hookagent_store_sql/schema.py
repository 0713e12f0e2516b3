"""The tables, built per configuration (prefix, schema) and per dialect flavour.

Why the column types differ per dialect: ids must compare byte-exactly everywhere (case,
NFC/NFD and trailing spaces all distinct), so PostgreSQL gets ``COLLATE "C"``, MySQL/MariaDB a
NO-PAD binary utf8mb4 collation, SQLite its default BINARY collation. The primary keys never
hold more than one id of up to 256 characters next to fixed-size columns: a slot is addressed
by ``(user_id, slot_hash)`` where ``slot_hash`` is a digest of (session_id, key), which keeps
every index under MySQL's 3072-byte and PostgreSQL's 2704-byte key limits.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.types import TypeEngine

from .config import TableNames

ID_LENGTH = 256
HASH_LENGTH = 32
ROLE_LENGTH = 32
MSG_ID_LENGTH = 128


@lru_cache(maxsize=4096)  # a call's load and save hash the same slot: computed once
def slot_hash(session_id: str, key: str) -> str:
    """128-bit hex digest of (session_id, key); ids cannot hold NUL, so the input is injective."""
    raw = session_id.encode("utf-8") + b"\x00" + key.encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:HASH_LENGTH]


class Flavor:
    """Column types for one dialect (``postgresql``, ``mysql``, ``mariadb`` or ``sqlite``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def id(self) -> TypeEngine[str]:
        if self.name == "postgresql":
            return postgresql.VARCHAR(ID_LENGTH, collation="C")
        if self.name in ("mysql", "mariadb"):
            coll = "utf8mb4_nopad_bin" if self.name == "mariadb" else "utf8mb4_0900_bin"
            return mysql.VARCHAR(ID_LENGTH, charset="utf8mb4", collation=coll)
        return String(ID_LENGTH)

    def ascii(self, length: int) -> TypeEngine[str]:
        if self.name == "postgresql":
            return postgresql.VARCHAR(length, collation="C")
        if self.name in ("mysql", "mariadb"):
            return mysql.VARCHAR(length, charset="ascii", collation="ascii_bin")
        return String(length)

    def text(self) -> TypeEngine[str]:
        if self.name in ("mysql", "mariadb"):
            # TEXT holds 64 KiB; a message may be 1 MiB and a head 8 MiB
            return mysql.MEDIUMTEXT(charset="utf8mb4", collation="utf8mb4_bin")
        return Text()

    def short(self, length: int) -> TypeEngine[str]:
        if self.name in ("mysql", "mariadb"):
            return mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin")
        return String(length)

    def timestamp(self) -> TypeEngine[Any]:
        if self.name in ("mysql", "mariadb"):
            return mysql.DATETIME(fsp=6)
        return DateTime(timezone=False)


def _table_kw(flavor: Flavor) -> dict[str, Any]:
    if flavor.name in ("mysql", "mariadb"):
        return {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
    return {}


class Tables:
    """The current (latest migration) shape of every table, for queries and DDL."""

    def __init__(self, names: TableNames, flavor: Flavor, *, version: int = 4) -> None:
        self.names, self.flavor = names, flavor
        self.metadata = MetaData(schema=names.schema)
        f, kw, p = flavor, _table_kw(flavor), names.prefix
        slot_cols: list[Column[Any]] = [
            Column("user_id", f.id(), nullable=False),
            Column("slot_hash", f.ascii(HASH_LENGTH), nullable=False),
            Column("session_id", f.id(), nullable=False),
            Column("state_key", f.id(), nullable=False),
            Column("version", BigInteger, nullable=False),
        ]
        if version >= 2:
            slot_cols.append(Column("generation", BigInteger, nullable=False, server_default="0"))
        slot_cols += [
            Column("message_count", Integer, nullable=False),
            Column("head", f.text(), nullable=False),
            Column("created_at", f.timestamp(), nullable=False),
            Column("updated_at", f.timestamp(), nullable=False),
        ]
        self.slots = Table(
            names.slots,
            self.metadata,
            *slot_cols,
            PrimaryKeyConstraint("user_id", "slot_hash", name=f"{p}slots_pk"),
            Index(f"{p}slots_by_session", "user_id", "session_id"),
            **kw,
        )
        self.messages = Table(
            names.messages,
            self.metadata,
            Column("user_id", f.id(), nullable=False),
            Column("slot_hash", f.ascii(HASH_LENGTH), nullable=False),
            Column("seq", Integer, nullable=False),
            Column("session_id", f.id(), nullable=False),
            Column("state_key", f.id(), nullable=False),
            Column("role", f.short(ROLE_LENGTH), nullable=False),
            Column("msg_id", f.short(MSG_ID_LENGTH), nullable=False),
            Column("body", f.text(), nullable=False),
            PrimaryKeyConstraint("user_id", "slot_hash", "seq", name=f"{p}messages_pk"),
            **kw,
        )
        # a row per save (migration 4): the records of messages ``end_seq - n .. end_seq - 1``
        # joined by "\n" (a record never holds a raw newline); ``end_seq`` (exclusive) is the
        # key so "the chunks past what I hold" (``end_seq > start``) is an index range
        self.chunks = Table(
            names.chunks,
            self.metadata,
            Column("user_id", f.id(), nullable=False),
            Column("slot_hash", f.ascii(HASH_LENGTH), nullable=False),
            Column("end_seq", Integer, nullable=False),
            Column("n", Integer, nullable=False),
            Column("body", f.text(), nullable=False),
            PrimaryKeyConstraint("user_id", "slot_hash", "end_seq", name=f"{p}chunks_pk"),
            **kw,
        )
        if version < 4:
            self.metadata.remove(self.chunks)
        self.fences = Table(
            names.fences,
            self.metadata,
            Column("user_id", f.id(), nullable=False),
            Column("session_id", f.id(), nullable=False),
            Column("epoch", BigInteger, nullable=False),
            Column("owner", f.id(), nullable=False),
            Column("updated_at", f.timestamp(), nullable=False),
            PrimaryKeyConstraint("user_id", "session_id", name=f"{p}fences_pk"),
            **kw,
        )
        if version < 2:
            self.metadata.remove(self.fences)

    def all(self) -> list[Table]:
        return list(self.metadata.sorted_tables)


def migrations_table(names: TableNames, flavor: Flavor) -> Table:
    """The version ledger: one row per applied migration."""
    return Table(
        names.migrations,
        MetaData(schema=names.schema),
        Column("version", Integer, nullable=False),
        Column("name", f_short(flavor), nullable=False),
        Column("applied_at", flavor.timestamp(), nullable=False),
        PrimaryKeyConstraint("version", name=f"{names.prefix}schema_migrations_pk"),
        **_table_kw(flavor),
    )


def f_short(flavor: Flavor) -> TypeEngine[str]:
    return flavor.short(100)
