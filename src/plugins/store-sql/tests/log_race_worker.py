"""One of two processes racing on one session's log (test_sessionlog_race.py): take the
lease when it is free, commit one event per batch, and every 7th batch sleep past the lease
so that the other process takes it; print every commit's outcome as one JSON list."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from hookagent.errors import LeaseHeld, LogFenced, StalePrefix
from hookagent.sessionlog import LogEvent, LogWriter
from hookagent_store_sql import SqlSessionLog

LEASE = 0.3


async def main(url: str, prefix: str, schema: str, name: str, seconds: float) -> None:
    log = SqlSessionLog(url, table_prefix=prefix, schema=schema or None)
    out: list[list[object]] = []
    writer: LogWriter | None = None
    seq, n, end = 0, 0, time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            if writer is None:
                try:
                    writer = await log.acquire("u", "race", name, LEASE)
                except LeaseHeld:
                    await asyncio.sleep(0.01)
                    continue
                seq = writer.seq
            n += 1
            batch_id = f"{name}-{n}"
            event = LogEvent("race/tick", {"by": name, "n": n}, event_id=batch_id)
            try:
                got = await log.commit(writer, batch_id, seq, [event])
                seq = got.last_seq
                out.append(["ok", batch_id, got.first_seq, writer.epoch])
            except (LogFenced, StalePrefix) as exc:
                out.append([type(exc).__name__, batch_id, 0, writer.epoch])
                writer = None
            if n % 7 == 0:
                await asyncio.sleep(LEASE + 0.15)  # the lease runs out meanwhile
    finally:
        await log.aclose()
    print(json.dumps(out))


if __name__ == "__main__":
    url, prefix, schema, name, seconds = sys.argv[1:6]
    asyncio.run(main(url, prefix, schema, name, float(seconds)))
