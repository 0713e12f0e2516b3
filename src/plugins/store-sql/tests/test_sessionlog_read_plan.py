"""A read of the SQL log seeks to the commit holding ``after + 1``; it does not read and
filter every commit of the session (a cold load makes ~16 point reads for its history
segments: each one scanned 4,000 commits, 2 ms apiece on PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import LogCorrupt
from hookagent.sessionlog import LogEvent
from hookagent_store_sql import SqlSessionLog
from hookagent_store_sql.log_schema import (
    read_at_param,
    read_at_sql,
    read_range_pg_sql,
    read_sql,
)
from logenv import fresh_log
from sqlalchemy import delete, text

pytestmark = pytest.mark.anyio

COMMITS = 300


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def filled(log: SqlSessionLog) -> None:
    """``COMMITS`` commits of one event each (seq k is the commit starting at k)."""
    w = await log.acquire("u", "s", "run", 600)
    for k in range(COMMITS):
        await log.commit(w, f"b{k}", k, [LogEvent("app/x", {"k": k}, event_id=f"e{k}")])


def tables(log: SqlSessionLog) -> tuple[str, str]:
    prep = log.engine.dialect.identifier_preparer
    return prep.format_table(log.tables.heads), prep.format_table(log.tables.commits)


def removed_by_filter(plan: Any) -> int:
    """Rows every node of an EXPLAIN (ANALYZE, FORMAT JSON) plan read and threw away."""
    if isinstance(plan, list):
        return sum(removed_by_filter(p) for p in plan)
    if not isinstance(plan, dict):
        return 0
    own = int(plan.get("Rows Removed by Filter", 0)) + int(
        plan.get("Rows Removed by Index Recheck", 0)
    )
    return own + sum(removed_by_filter(v) for v in plan.values() if isinstance(v, (list, dict)))


async def test_postgresql_reads_seek_to_the_commit(tmp_path: Path) -> None:
    async with fresh_log("postgresql", tmp_path) as log:
        await filled(log)
        heads, commits = tables(log)
        async with log.engine.connect() as conn:
            await conn.execute(text(f"ANALYZE {heads}"))
            await conn.execute(text(f"ANALYZE {commits}"))
            # a table this small may be read whole by choice; the question is whether the
            # statement can seek (without the bound it filters the commits before `after`)
            await conn.execute(text("SET enable_seqscan = off"))
            for one in (True, False):
                sql = read_sql(heads, commits, (":u", ":s", ":after"), one=one)
                got = await conn.execute(
                    text(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}"),
                    {"u": "u", "s": "s", "after": 10},
                )
                plan = got.scalar()
                plan = json.loads(plan) if isinstance(plan, str) else plan
                # before: every commit of the session was read and dropped by last_seq > after
                assert removed_by_filter(plan) <= 1, (one, json.dumps(plan)[:2000])


def indexes_used(plan: Any) -> set[str]:
    if isinstance(plan, list):
        return set().union(*map(indexes_used, plan)) if plan else set()
    if not isinstance(plan, dict):
        return set()
    own = {plan["Index Name"]} if "Index Name" in plan else set()
    return own.union(*(indexes_used(v) for v in plan.values() if isinstance(v, (list, dict))))


async def test_postgresql_driver_reads_seek_on_tables_never_analyzed(tmp_path: Path) -> None:
    """The driver's statements (a cold load's point reads, all at once, and its range read)
    on tables just created and filled, before autovacuum analyzes them: the join form chose
    the batch index there and read the whole session (3.6 ms a point read at 4,046 commits)."""
    async with fresh_log("postgresql", tmp_path) as log:
        await filled(log)
        heads, commits = tables(log)
        statements = [
            (read_at_sql(heads, commits), ("u", "s", read_at_param([10, 150, COMMITS - 1]))),
            (read_range_pg_sql(heads, commits), ("u", "s", COMMITS - 20)),
        ]
        async with log.engine.connect() as conn:
            for sql, args in statements:
                got = await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", args)
                plan = got.scalar()
                plan = json.loads(plan) if isinstance(plan, str) else plan
                used = indexes_used(plan)
                assert not any(name.endswith("_batch") for name in used), (used, sql)
                assert removed_by_filter(plan) <= 1, json.dumps(plan)[:2000]


async def test_sqlite_reads_seek_to_the_commit(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path) as log:
        await filled(log)
        heads, commits = tables(log)
        async with log.engine.connect() as conn:
            for one, seek in ((True, "first_seq=?"), (False, "first_seq>?")):
                sql = read_sql(heads, commits, (":u", ":s", ":after"), one=one)
                got = await conn.execute(
                    text(f"EXPLAIN QUERY PLAN {sql}"), {"u": "u", "s": "s", "after": 10}
                )
                plan = [str(r[-1]) for r in got]
                on_c = [p for p in plan if p.startswith("SEARCH c ")]
                assert on_c and seek in on_c[0], plan


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mariadb"])
async def test_point_reads_find_every_seq_and_fail_closed_on_a_gap(
    dialect: str, tmp_path: Path
) -> None:
    async with fresh_log(dialect, tmp_path) as log:
        await filled(log)
        for seq in (1, 2, 150, COMMITS - 1, COMMITS):
            got = await log.read_after("u", "s", seq - 1, 1)
            assert [e.seq for e in got] == [seq] and got[0].payload == {"k": seq - 1}
        assert await log.read_after("u", "s", COMMITS, 1) == []
        c = log.tables.commits
        async with log.engine.begin() as conn:  # a commit lost behind the log's back
            await conn.execute(delete(c).where(c.c.user_id == "u", c.c.first_seq == 150))
        with pytest.raises(LogCorrupt):
            await log.read_after("u", "s", 149, 1)
        with pytest.raises(LogCorrupt):
            await log.read_after("u", "s", 149)
        assert [e.seq for e in await log.read_after("u", "s", 150, 1)] == [151]


async def test_postgresql_many_point_reads_take_no_array_parameter(tmp_path: Path) -> None:
    """asyncpg introspects an array parameter's type on every new connection (~10 ms, paid
    by a cold load's first read); the seqs go as one text of ints instead."""
    import asyncpg

    async with fresh_log("postgresql", tmp_path) as log:
        await filled(log)
        heads, commits = tables(log)
        conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/test")
        try:
            stmt = await conn.prepare(read_at_sql(heads, commits))
            kinds = [t.kind for t in stmt.get_parameters()]
            assert kinds == ["scalar"] * 3, stmt.get_parameters()
            rows = await stmt.fetch("u", "s", read_at_param([0, 149, COMMITS]))
            assert [r["first_seq"] for r in rows] == [1, 150, None]
        finally:
            await conn.close()
