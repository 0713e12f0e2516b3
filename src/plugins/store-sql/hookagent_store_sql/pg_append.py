"""PostgreSQL's one-statement append: the compare-and-set UPDATE and the INSERT of the new
messages in a single statement (writable CTEs), sent in autocommit, so the common save (new
messages at the version this instance holds) costs one round trip instead of four.

The INSERT runs only if the UPDATE matched; the statement is one implicit transaction, so it
applies wholly or not at all. Anything else (create, fence, truncation, a stale view) goes
through the ordinary transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, Text, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import TextClause

from .schema import Tables


def build(tables: Tables, conn_dialect: Any) -> TextClause:
    prep = conn_dialect.identifier_preparer
    slots, messages = prep.format_table(tables.slots), prep.format_table(tables.messages)
    # only the table names are formatted in: from the validated configuration, quoted
    sql = f"""
WITH upd AS (
    UPDATE {slots} SET version = :new_version, generation = :new_generation,
        message_count = :new_count, head = :new_head, updated_at = :now
    WHERE user_id = :u AND slot_hash = :h AND version = :expected
        AND generation = :gen AND message_count = :count
    RETURNING 1
), ins AS (
    INSERT INTO {messages} (user_id, slot_hash, seq, session_id, state_key, role, msg_id, body)
    SELECT :u, :h, r.seq, :s, :k, r.role, r.msg_id, r.body
    FROM unnest(:seqs, :roles, :msg_ids, :bodies) AS r(seq, role, msg_id, body)
    WHERE EXISTS (SELECT 1 FROM upd)
    RETURNING 1
)
SELECT (SELECT count(*) FROM upd) AS updated, (SELECT count(*) FROM ins) AS inserted
"""  # noqa: S608
    return text(sql).bindparams(
        bindparam("seqs", type_=ARRAY(Integer)),
        bindparam("roles", type_=ARRAY(Text)),
        bindparam("msg_ids", type_=ARRAY(Text)),
        bindparam("bodies", type_=ARRAY(Text)),
    )


def run(
    conn: Connection, stmt: TextClause, params: dict[str, Any], rows: list[dict[str, Any]]
) -> bool:
    """True if the save was applied (the UPDATE matched and every row went in)."""
    params = {
        **params,
        "seqs": [r["seq"] for r in rows],
        "roles": [r["role"] for r in rows],
        "msg_ids": [r["msg_id"] for r in rows],
        "bodies": [r["body"] for r in rows],
    }
    got = conn.execute(stmt, params).one()
    return bool(got.updated == 1 and got.inserted == len(rows))
