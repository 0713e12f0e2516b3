"""hookagent-store-sql: the SQL state store and session log (PostgreSQL, MySQL/MariaDB,
SQLite).

The names below are imported on first use (``hookagent.lazy``): plugin discovery imports this
package in every process, and they pull in SQLAlchemy and the database drivers.
"""

from typing import TYPE_CHECKING

from hookagent.lazy import lazy_exports

from .schemes import SCHEMES

if TYPE_CHECKING:
    from .config import TableNames
    from .migrations import LATEST, MIGRATIONS, MigrationStatus, check_migrations, migrate
    from .schema import slot_hash
    from .sessionlog import SqlSessionLog
    from .store import SQLAgentStateStore

__all__ = [
    "LATEST",
    "MIGRATIONS",
    "SCHEMES",
    "MigrationStatus",
    "SQLAgentStateStore",
    "SqlSessionLog",
    "TableNames",
    "check_migrations",
    "migrate",
    "slot_hash",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TableNames": ".config",
        "LATEST": ".migrations",
        "MIGRATIONS": ".migrations",
        "MigrationStatus": ".migrations",
        "check_migrations": ".migrations",
        "migrate": ".migrations",
        "slot_hash": ".schema",
        "SqlSessionLog": ".sessionlog",
        "SQLAgentStateStore": ".store",
    },
)
