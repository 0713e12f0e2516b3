"""PostgreSQL's one-statement append: the compare-and-set UPDATE and the INSERT of the new
messages in a single statement (writable CTEs), sent in autocommit, so the common save (new
messages at the version this instance holds) costs one round trip instead of four.

The INSERT runs only if the UPDATE matched; the statement is one implicit transaction, so it
applies wholly or not at all. Anything else (create, fence, truncation, a stale view) goes
through the ordinary transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hookagent.errors import StoreUnavailable
from sqlalchemy import Integer, Text, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import TextClause

from .queries import Queries
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


async def resolve(
    read: Callable[[str, Callable[[Connection], Any]], Awaitable[Any]],
    q: Queries,
    params: dict[str, Any],
    rows: list[dict[str, Any]],
    cause: BaseException,
) -> bool:
    """After a lost connection: True if our append is there, False if nothing happened."""

    def look(conn: Connection) -> tuple[Any, Any]:
        head = conn.execute(q.slot_row, params).first()
        first = conn.execute(q.body_at, {**params, "seq": rows[0]["seq"]}).scalar()
        return head, first

    try:
        head, body = await read("save", look)
    except StoreUnavailable:
        raise StoreUnavailable(
            "save: the connection was lost and the outcome is unknown"
        ) from cause
    if head is not None and head.version == params["expected"]:
        return False  # not applied: the transaction path will try again
    if (
        head is not None
        and head.version == params["new_version"]
        and head.generation == params["new_generation"]
        and head.message_count == params["new_count"]
        and body == rows[0]["body"]
    ):
        return True
    raise StoreUnavailable(
        "save: the connection was lost and another writer has moved the slot since; "
        "the outcome is unknown"
    ) from cause
