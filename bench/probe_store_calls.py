"""Round trips, bytes and client CPU per warm W1 call on a network store.

    .venv/bin/python bench/probe_store_calls.py 'redis://127.0.0.1:6379/15?prefix=hab_probe'
    .venv/bin/python bench/probe_store_calls.py \
        'postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=habprobe_'

Runs --warm calls of the standard workload (bench_agent.one_call) on a fresh session, then
--calls more twice: once direct (client CPU and wall per call, median) and once through a
counting TCP proxy (bench/roundtrips.py: round trips and bytes on the wire per call). The
load average is printed beside the wall figure. The session is deleted at the end (a
crashed run leaves it: the next run starts a new one). ``--no-proxy`` runs the direct calls
only, for ``perf stat -e instructions:u`` (run it at two --calls and take the difference).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import make_config, one_call
from roundtrips import CountingProxy


def via(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


async def main(url: str, warm: int, calls: int, proxied: bool = True) -> None:
    user, session = "probe-user", f"probe-{os.getpid()}"
    config = make_config(url)
    store = await config.kernel.store()
    await store.delete(user, session)
    for n in range(1, warm + 1):
        await one_call(config, user, session, n)
    cpu, wall = [], []
    for n in range(warm + 1, warm + calls + 1):
        c, w = time.process_time(), time.perf_counter()
        await one_call(config, user, session, n)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    await config.aclose()
    med = statistics.median
    load = Path("/proc/loadavg").read_text().split()[:3]
    if not proxied:  # for instruction counts (perf stat): only the direct calls
        print(f"client CPU per call: {med(cpu) * 1000:.3f} ms median; load {' '.join(load)}")
        return
    parts = urlsplit(url)
    async with CountingProxy(parts.hostname or "127.0.0.1", parts.port or 0) as proxy:
        pconfig = make_config(via(url, proxy.port))
        pstore = await pconfig.kernel.store()
        base = warm + calls
        await one_call(pconfig, user, session, base + 1)  # connects, prepares
        proxy.reset()
        for n in range(base + 2, base + 2 + calls):
            await one_call(pconfig, user, session, n)
        turns, sent, received = proxy.turns, proxy.sent, proxy.received
        await pstore.delete(user, session)
        await pconfig.aclose()
    print(f"store: {url}")
    print(f"history at the counted calls: ~{4 * (warm + calls)} messages")
    print(f"round trips per warm call: {turns / calls:.2f} ({turns} over {calls} calls)")
    print(f"bytes per call: {sent / calls:.0f} sent, {received / calls:.0f} received")
    print(f"client CPU per call: {med(cpu) * 1000:.3f} ms median")
    print(
        f"wall per call: {med(wall) * 1000:.3f} ms median (CPU/wall {med(cpu) / med(wall):.2f}; "
        f"load {' '.join(load)})"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--no-proxy", action="store_true", help="skip the counted calls")
    a = ap.parse_args()
    asyncio.run(main(a.url, a.warm, a.calls, not a.no_proxy))
