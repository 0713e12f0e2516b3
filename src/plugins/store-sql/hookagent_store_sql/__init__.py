"""hookagent-store-sql: the SQL state store and session log (PostgreSQL, MySQL/MariaDB,
SQLite)."""

from .config import SCHEMES, TableNames
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
