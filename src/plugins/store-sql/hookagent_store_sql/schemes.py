"""The URL schemes this distribution serves and the async driver behind each.

Its own module, free of SQLAlchemy, because plugin discovery reads ``SCHEMES`` in every
process: the drivers are imported only when a SQL store or session log is opened.
"""

from __future__ import annotations

# scheme as written by users -> the async driver we actually use
DRIVERS: dict[str, str] = {
    "postgresql+asyncpg": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "mysql+aiomysql": "mysql+aiomysql",
    "mysql": "mysql+aiomysql",
    "mariadb+aiomysql": "mariadb+aiomysql",
    "mariadb": "mariadb+aiomysql",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "sqlite": "sqlite+aiosqlite",
}
SCHEMES: tuple[str, ...] = tuple(DRIVERS)
