"""Per-store probes: wipe the benchmark's own slot area, and ask the store what it holds.

The probes know each plugin's physical layout (file tree, Redis key prefix, SQL table
prefix); the benchmark itself only talks to the store through the agent. A probe only ever
wipes what the benchmark owns: a file root under a temp dir or named ``*bench*``, the Redis
keys under the URL's ``prefix``, the SQL tables under the URL's ``table_prefix``, a SQLite
file under a temp dir.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hookagent.codec import encode_head, encode_msg
from hookagent.store.ids import encode_id


def _owned_path(path: Path) -> bool:
    p = str(path.resolve())
    return p.startswith((tempfile.gettempdir() + "/", "/tmp/")) or "bench" in p


def _query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


class Probe:
    """What a store holds; the default (in-memory) counts the encoded bytes it keeps."""

    kind = "memory"

    def __init__(self, url: str) -> None:
        self.url = url

    def reset(self) -> None:
        """Remove everything a previous benchmark run left (before the store is opened)."""

    async def stored_bytes(self, store: Any, user_id: str, session_id: str) -> dict[str, Any]:
        got = await store.get_versioned(user_id, session_id)
        if got.state is None:
            return {"bytes": 0, "how": "no state"}
        size = len(encode_head(got.state)) + sum(len(encode_msg(m)) for m in got.state.context)
        return {"bytes": size, "how": "encoded head + messages (objects are kept decoded)"}


class FileProbe(Probe):
    kind = "file"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.root = Path(urlsplit(url).path if "://" in url else url)

    def reset(self) -> None:
        if self.root.exists():
            if not _owned_path(self.root):
                raise SystemExit(f"refusing to wipe {self.root}: use a path under /tmp or *bench*")
            shutil.rmtree(self.root)

    async def stored_bytes(self, store: Any, user_id: str, session_id: str) -> dict[str, Any]:
        d = self.root / encode_id(user_id) / encode_id(session_id)
        files = [p for p in d.rglob("*") if p.is_file()]
        apparent = sum(p.stat().st_size for p in files)
        du = subprocess.run(["du", "-s", "-B1", str(d)], capture_output=True, text=True)
        blocks = int(du.stdout.split()[0]) if du.returncode == 0 else None
        return {
            "bytes": apparent,
            "du_bytes": blocks,
            "files": len(files),
            "how": f"sum of file sizes under the session dir ({len(files)} files; du -s in du_bytes)",
        }


class RedisProbe(Probe):
    kind = "redis"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.prefix = _query(url).get("prefix", "hookagent")

    def _client(self) -> Any:
        import redis

        base = self.url.split("?", 1)[0]
        return redis.Redis.from_url(base)

    def reset(self) -> None:
        r = self._client()
        keys = list(r.scan_iter(match=f"{self.prefix}:*", count=1000))
        for i in range(0, len(keys), 500):
            r.delete(*keys[i : i + 500])
        r.close()

    async def stored_bytes(self, store: Any, user_id: str, session_id: str) -> dict[str, Any]:
        r = self._client()
        pattern = f"{self.prefix}:{{{encode_id(user_id)}:{encode_id(session_id)}}}*"
        total = n = 0
        for k in r.scan_iter(match=pattern, count=1000):
            total += r.memory_usage(k, samples=0) or 0
            n += 1
        r.close()
        return {"bytes": total, "how": f"sum MEMORY USAGE (SAMPLES 0) over the slot's {n} keys"}


class SqlProbe(Probe):
    """PostgreSQL: pg_total_relation_size of the plugin's tables; SQLite: the file size."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.kind = "sqlite" if url.startswith("sqlite") else "postgres"
        self.prefix = _query(url).get("table_prefix", "hookagent_")
        self.schema = _query(url).get("schema")

    @property
    def sqlite_path(self) -> Path:
        # SQLAlchemy: sqlite:///relative.db, sqlite:////absolute.db
        rest = self.url.split("://", 1)[1].split("?", 1)[0]
        return Path(rest[1:])

    def _pg_exec(self, sql: str) -> list[tuple[Any, ...]]:
        parts = urlsplit(self.url)
        dsn = f"host={parts.hostname} port={parts.port or 5432} user={parts.username or 'postgres'}"
        dsn += f" dbname={parts.path.lstrip('/') or 'postgres'}"
        out = subprocess.run(
            ["psql", "-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", dsn, "-c", sql],
            capture_output=True,
            text=True,
            check=True,
        )
        return [tuple(line.split("\t")) for line in out.stdout.splitlines() if line]

    def _pg_tables(self) -> list[str]:
        schema = self.schema or "public"
        like = self.prefix.replace("_", r"\_") + "%"
        rows = self._pg_exec(
            "SELECT quote_ident(schemaname)||'.'||quote_ident(tablename) FROM pg_tables "
            f"WHERE schemaname = '{schema}' AND tablename LIKE '{like}'"
        )
        return [r[0] for r in rows]

    def reset(self) -> None:
        if self.kind == "sqlite":
            path = self.sqlite_path
            if not _owned_path(path):
                raise SystemExit(f"refusing to delete {path}: use a path under /tmp or *bench*")
            for suffix in ("", "-wal", "-shm", "-journal"):
                p = Path(str(path) + suffix)
                if p.exists():
                    p.unlink()
            return
        tables = self._pg_tables()
        if tables:
            self._pg_exec(f"DROP TABLE {', '.join(tables)} CASCADE")

    async def stored_bytes(self, store: Any, user_id: str, session_id: str) -> dict[str, Any]:
        if self.kind == "sqlite":
            path = self.sqlite_path
            c = sqlite3.connect(str(path))
            try:
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                c.close()
            wal = Path(str(path) + "-wal")
            size = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
            return {"bytes": size, "how": "sqlite file size after wal_checkpoint(TRUNCATE)"}
        tables = self._pg_tables()
        total = 0
        for t in tables:
            total += int(self._pg_exec(f"SELECT pg_total_relation_size('{t}')")[0][0])
        return {
            "bytes": total,
            "how": f"sum pg_total_relation_size({', '.join(tables)}) (dead tuples included)",
        }


def probe_for(store: str) -> Probe:
    if store == "memory":
        return Probe(store)
    scheme = store.split("://", 1)[0] if "://" in store else "file"
    if scheme == "file":
        return FileProbe(store)
    if scheme.startswith("redis"):
        return RedisProbe(store)
    if scheme.startswith(("postgresql", "sqlite")):
        return SqlProbe(store)
    return Probe(store)


def default_data_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "habench")
