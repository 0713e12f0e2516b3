"""G6: 8 processes x 150 compare-and-set attempts on one slot lose nothing, on every dialect.

Negative control: the same harness saving with UNCONDITIONAL after a read (naive
read-then-write, no version predicate) loses acknowledged updates.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from hookagent_store_sql import TableNames
from lost_update_harness import check, final, seed, worker
from sqlenv import DIALECTS, drop_tables, unique_name, url_for

PROCESSES = 8
ATTEMPTS = 150


@pytest.fixture(scope="module")
def pool():
    # forkserver: one clean server process imports the harness (SQLAlchemy, drivers) once and
    # forks the workers from there; plain fork from pytest could inherit other tests' threads
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        ctx.set_forkserver_preload(["lost_update_harness"])
    with ProcessPoolExecutor(PROCESSES, mp_context=ctx) as ex:
        list(ex.map(abs, range(PROCESSES)))  # start every process before the clock matters
        yield ex


def _run(pool, dialect: str, tmp_path: Path, attempts: int, naive: bool):
    url = url_for(dialect, tmp_path)
    names = TableNames(unique_name("g6"))
    options = {"table_prefix": names.prefix}
    try:
        asyncio.run(seed(url, options))
        futures = [pool.submit(worker, url, options, w, attempts, naive) for w in range(PROCESSES)]
        records = [r for f in futures for r in f.result(timeout=240)]
        version, history = asyncio.run(final(url, options))
        return check(records, version, history)
    finally:
        asyncio.run(drop_tables(url, names))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_cas_loses_no_update(pool, dialect: str, tmp_path: Path) -> None:
    verdict = _run(pool, dialect, tmp_path, ATTEMPTS, naive=False)
    print(f"G6 {dialect}: {verdict}")
    assert verdict.acked > 0 and verdict.failed > 0  # real contention happened
    assert verdict.unknown == 0
    assert verdict.clean, verdict


@pytest.mark.timeout(300)
def test_naive_read_then_write_loses_updates(pool, tmp_path: Path) -> None:
    lost = {}
    for dialect in ("sqlite", "postgresql"):
        verdict = _run(pool, dialect, tmp_path, 40, naive=True)
        print(f"G6 negative control {dialect}: {verdict}")
        lost[dialect] = verdict.lost
        assert verdict.acked == PROCESSES * 40  # naive writes never see a conflict
    assert sum(lost.values()) > 0, lost
