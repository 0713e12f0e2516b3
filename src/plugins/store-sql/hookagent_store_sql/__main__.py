"""``python -m hookagent_store_sql migrate|check URL [--table-prefix P] [--schema S]``.

Exit status: 0 done / up to date, 1 migrations pending (check), 2 error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from hookagent.errors import SessionStoreError

from .migrations import LATEST, check_migrations, migrate


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hookagent_store_sql", description=__doc__)
    p.add_argument("command", choices=("migrate", "check"))
    p.add_argument("url", help="e.g. postgresql+asyncpg://user@host/db or sqlite+aiosqlite:///f.db")
    p.add_argument("--table-prefix", default=None, help="table name prefix (default hookagent_)")
    p.add_argument("--schema", default=None, help="PostgreSQL schema / MySQL database")
    p.add_argument("--to", type=int, default=None, help=f"target version (default {LATEST})")
    return p


async def _run(args: argparse.Namespace) -> int:
    kw = {"table_prefix": args.table_prefix, "schema": args.schema}
    if args.command == "migrate":
        status = await migrate(args.url, to_version=args.to, **kw)
        print(f"schema at version {status.current} (latest {status.latest})")
        return 0
    status = await check_migrations(args.url, **kw)
    pending = ", ".join(map(str, status.pending)) or "none"
    print(f"schema at version {status.current} (latest {status.latest}); pending: {pending}")
    return 0 if status.up_to_date else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except SessionStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
