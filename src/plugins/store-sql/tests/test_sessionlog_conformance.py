"""The kernel's SessionLogConformance suite on each dialect (a fresh, empty log for every
test: SQLite a new file, PostgreSQL and MariaDB tables made once per class and emptied before
each test, ``classtables``), with the three optional hooks: another handle (a new SqlSessionLog on a new engine over the
same tables) and raw rows planted behind the log's back, so no check is "not run"."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from classtables import ClassTables, class_tables
from hookagent.sessionlog import LogEvent
from hookagent.testing import SessionLogConformance
from hookagent_store_sql import SqlSessionLog
from logenv import another_handle, fresh_log, plant_head, plant_orphan


class SQLLogConformance(SessionLogConformance):
    dialect = "sqlite"

    @pytest.fixture(scope="class")
    @classmethod
    def tables(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassTables | None]:
        if cls.dialect == "sqlite":
            yield None
            return
        with class_tables(
            cls.dialect,
            tmp_path_factory.mktemp("log"),
            lambda url, n: SqlSessionLog(url, table_prefix=n.prefix, schema=n.schema),
            schema=cls.dialect == "postgresql",
        ) as tables:
            yield tables

    @pytest.fixture
    async def log(self, tmp_path: Path, tables: ClassTables | None) -> AsyncIterator[SqlSessionLog]:
        if tables is None:
            async with fresh_log(self.dialect, tmp_path) as log:
                yield log
            return
        n = tables.names
        log = SqlSessionLog(tables.url, table_prefix=n.prefix, schema=n.schema)
        try:
            await tables.empty(log.engine)
            yield await log.open()
        finally:
            await log.aclose()

    async def another_handle(self, log: Any) -> Any:
        return await another_handle(log).open()

    async def plant_orphan(
        self, log: Any, user_id: str, session_id: str, batch_id: str, events: Sequence[LogEvent]
    ) -> None:
        await plant_orphan(log, user_id, session_id, batch_id, events)

    async def plant_head(self, log: Any, user_id: str, session_id: str, seq: int) -> None:
        await plant_head(log, user_id, session_id, seq)


class TestPostgreSQL(SQLLogConformance):
    dialect = "postgresql"


class TestMariaDB(SQLLogConformance):
    dialect = "mariadb"


class TestSQLite(SQLLogConformance):
    dialect = "sqlite"
