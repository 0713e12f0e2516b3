"""The kernel's crash harness (issue 13, item 9): a writer process SIGKILLed at random
points of its save loop, mostly mid-save. After every kill the slot loads at the last
acknowledged version or the one in flight, with exactly that version's history, and takes
the next save: SQLite's file (WAL, both paths) and a server's rolled-back transaction."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from hookagent.testing.crash import kill_mid_save
from hookagent_store_sql import TableNames
from sqlenv import drop_tables, unique_name, url_for

PATHS = {
    "sqlite": ("sqlite", "direct"),
    "sqlite-sqlalchemy": ("sqlite", "sqlalchemy"),
    "postgresql": ("postgresql", "direct"),
    "mariadb": ("mariadb", "sqlalchemy"),
}
KILLS = 8


@pytest.mark.parametrize("path", list(PATHS))
def test_a_writer_killed_mid_save_loses_nothing_acknowledged(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialect, route = PATHS[path]
    url = url_for(dialect, tmp_path)
    names = TableNames(unique_name("crash"))
    here = str(Path(__file__).parent)  # the writer process imports the factory from here
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    )
    try:
        report = kill_mid_save("sqlenv:crash_store", url, names.prefix, route, kills=KILLS)
    finally:
        anyio.run(drop_tables, url, names)
    print(path, report)
    assert report.kills == KILLS and report.final_version > KILLS
    assert report.killed_in_save >= 1  # a kill did land mid-save, not only between saves
