"""A counting TCP proxy: how many round trips (and bytes) a client makes to a server.

    async with CountingProxy("127.0.0.1", 6379) as proxy:
        url = f"redis://127.0.0.1:{proxy.port}/15"
        ... run calls through url ...
        proxy.turns, proxy.sent, proxy.received

A *turn* is a burst of bytes from the client that follows bytes from the server (or opens a
connection): one request-reply exchange, whatever the protocol (a Redis pipeline or one
PostgreSQL extended-protocol message group is one turn). Counted per connection, summed.
Loopback only; a bench and test helper, never used by the stores.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class CountingProxy:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.target = host, port
        self.port = 0
        self.turns = self.sent = self.received = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def reset(self) -> None:
        self.turns = self.sent = self.received = 0

    async def __aenter__(self) -> CountingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection(self.host, self.target)
        state = {"client_turn": False}

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, up: bool) -> None:
            try:
                while data := await r.read(65536):
                    if up:
                        if not state["client_turn"]:
                            self.turns += 1
                            state["client_turn"] = True
                        self.sent += len(data)
                    else:
                        state["client_turn"] = False
                        self.received += len(data)
                    w.write(data)
                    await w.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                w.close()

        up = asyncio.ensure_future(pump(cr, sw, True))
        down = asyncio.ensure_future(pump(sr, cw, False))
        self._tasks |= {up, down}
        await asyncio.gather(up, down, return_exceptions=True)
        self._tasks -= {up, down}
