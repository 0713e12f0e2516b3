"""An example hookagent state store on SQLite, written the way a third party would write one.

It is an example for plugin authors (see docs/writing-a-store-plugin.md). The project's own
SQL store, for PostgreSQL, MySQL/MariaDB and SQLite, is ``hookagent-store-sql``.
"""

from .plugin import SCHEME, open_store
from .store import ExampleSQLiteStore

__all__ = ["SCHEME", "ExampleSQLiteStore", "open_store"]
