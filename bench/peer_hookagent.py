"""hookagent in the peers' own harness (``shared/bench/peers``): an ``Adapter`` like theirs.

``run_peers.sh`` copies the harness to a temp dir, drops this file, ``bench_agent.py`` and
``bench_texts.py`` beside it, and registers it in ``driver.PEERS`` from a wrapper. The agent
is the one of ``bench/workload.py``: one ``AgentConfig`` per adapter, a fresh agent built for
every call. Stores use the harness's servers and naming (``<peer>_<store>_<slot>``).
"""

from __future__ import annotations

import time
from typing import Any

import bench_texts
import common
from bench_agent import make_config, one_call, store_plugins
from common import (
    DATA_DIR,
    PG_HOST,
    PG_PORT,
    PG_USER,
    REDIS_HOST,
    REDIS_PORT,
    Adapter,
    StoreInfo,
    dir_bytes,
    fresh_file,
    pg_db_bytes,
    pg_reset_db,
    redis_db_bytes,
    redis_reset_db,
    sqlite_file_bytes,
)

for _n in (1, 7, 500, 1001):  # same workload strings as every peer, or the run means nothing
    assert bench_texts.user_text(_n) == common.user_text(_n)
    assert bench_texts.tool_text(_n) == common.tool_text(_n)
    assert bench_texts.final_text(_n) == common.final_text(_n)

PLUGINS = store_plugins()  # import the store plugins (and their drivers) at import time
REDIS_DB = {"w1": 6, "w2": 7}  # the harness uses DBs 1-5


class HookagentAdapter(Adapter):
    peer = "hookagent"
    packages = [
        "hookagent",
        "hookagent-store-jsonfile",
        "hookagent-store-redis",
        "hookagent-store-sql",
        "redis",
        "SQLAlchemy",
        "asyncpg",
        "aiosqlite",
        "hookagent-session-log",
    ]
    stores = {
        "mem": StoreInfo("mem", "InMemoryAgentStateStore", persistent=False),
        "file": StoreInfo("file", "JSON-file store (local disk)"),
        "redis": StoreInfo("redis", "Redis store"),
        "postgres": StoreInfo("postgres", "SQL store (asyncpg, pool 10)"),
        "sqlite": StoreInfo("sqlite", "SQL store (sqlite+aiosqlite file)"),
        # EVENT_LOG mode: the session log is the state's authority (hookagent-session-log)
        "file-log": StoreInfo("file-log", "session log on JSON files (EVENT_LOG)"),
        "redis-log": StoreInfo("redis-log", "session log on Redis (EVENT_LOG)"),
        "postgres-log": StoreInfo("postgres-log", "session log on PostgreSQL (EVENT_LOG)"),
        "sqlite-log": StoreInfo("sqlite-log", "session log on SQLite (EVENT_LOG)"),
    }

    def __init__(self, store: str, slot: str) -> None:
        super().__init__(store, slot)
        self.config: Any = None
        self.kstore: Any = None

    @property
    def file_root(self) -> Any:
        return DATA_DIR / self.tag

    @property
    def base(self) -> str:
        """The backend: ``redis`` for both ``redis`` (LEGACY) and ``redis-log`` (EVENT_LOG)."""
        return self.store.removesuffix("-log")

    @property
    def url(self) -> str:
        if self.base == "mem":
            return "memory"
        if self.base == "file":
            return f"file://{self.file_root}"
        if self.base == "redis":
            return f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB[self.slot]}?prefix=hookagent"
        if self.base == "postgres":
            return f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{self.tag}"
        return f"sqlite+aiosqlite:///{self.sqlite_path}"

    async def open(self, fresh: bool) -> None:
        if fresh:
            if self.base == "file" and self.file_root.exists():
                # moved aside, not deleted: on ext4 without a journal the next minutes' new
                # inodes would pay for every file deleted (``floor_w2_file.py``); the
                # sitting's data directory goes at its end
                trash = DATA_DIR / ".trash"
                trash.mkdir(parents=True, exist_ok=True)
                self.file_root.rename(trash / f"{self.tag}-{time.time_ns()}")
            elif self.base == "redis":
                redis_reset_db(REDIS_DB[self.slot])
            elif self.base == "postgres":
                pg_reset_db(self.tag)
            elif self.base == "sqlite":
                fresh_file(self.sqlite_path)
        if self.base == "sqlite":
            self.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        if self.store.endswith("-log"):
            from hookagent import InMemoryAgentStateStore
            from hookagent_session_log import plugin as session_log

            never_read = InMemoryAgentStateStore()  # the log is the authority
            plugins = [*PLUGINS, session_log]
            self.config = make_config(never_read, plugins=plugins, session_log=self.url)
        else:
            self.config = make_config(self.url, plugins=PLUGINS)
        self.kstore = await self.config.kernel.store()

    async def call(self, user_id: str, session_id: str, n: int) -> None:
        await one_call(self.config, user_id, session_id, n)

    async def history_len(self, user_id: str, session_id: str) -> int:
        got = await self.kstore.get_versioned(user_id, session_id)
        return len(got.state.context) if got.state is not None else 0

    async def stored_bytes(self) -> dict[str, Any]:
        if self.base == "file":
            return dir_bytes(self.file_root)
        if self.base == "redis":
            return redis_db_bytes(REDIS_DB[self.slot])
        if self.base == "postgres":
            return pg_db_bytes(self.tag)
        if self.base == "sqlite":
            return sqlite_file_bytes(self.sqlite_path)
        from hookagent.codec import encode_head, encode_msg

        size = 0
        for user, sess in ((bench_texts.W1_USER, bench_texts.W1_SESSION),):
            got = await self.kstore.get_versioned(user, sess)
            if got.state is not None:
                size += len(encode_head(got.state))
                size += sum(len(encode_msg(m)) for m in got.state.context)
        return {"bytes": size, "how": "encoded head + messages of the W1 session"}

    async def close(self) -> None:
        if self.config is not None:
            await self.config.aclose()


ADAPTER = HookagentAdapter
