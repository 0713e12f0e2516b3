"""One daemon thread per process keeps the writer leases of live runs renewed.

A run holds its session's lease while the model or a tool runs, possibly for longer than
the lease. A task renewing it beside every model and tool call would cost a task group per
call (~85 µs); instead this thread wakes every ``TICK`` seconds and, for each run whose
lease is a third used, schedules the renewal on that run's own event loop
(``anyio.from_thread.run`` with the loop's token), where its connections live.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import anyio.lowlevel

if TYPE_CHECKING:
    from .recording import Recording

log = logging.getLogger("hookagent.session_log")
TICK = 0.5


class Heartbeat:
    def __init__(self) -> None:
        self._live: dict[int, tuple[Recording, Any]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, rec: Recording) -> None:
        """Renew ``rec``'s lease until ``forget`` (call from inside its event loop)."""
        token = anyio.lowlevel.current_token()
        with self._lock:
            self._live[id(rec)] = (rec, token)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="hookagent-lease", daemon=True
                )
                self._thread.start()

    def forget(self, rec: Recording) -> None:
        with self._lock:
            self._live.pop(id(rec), None)

    def _due(self) -> list[tuple[Recording, Any]]:
        now = time.time()
        with self._lock:
            return [
                (rec, token)
                for rec, token in self._live.values()
                if not rec.finished and rec.writer.lease_until - now < rec.lease * 2 / 3
            ]

    def _run(self) -> None:
        while True:
            time.sleep(TICK)
            for rec, token in self._due():
                try:
                    anyio.from_thread.run(rec.renew, token=token)
                except Exception:  # a lost lease, a closed loop: its next commit says so
                    log.warning(
                        "session-log: could not renew the lease of run %s",
                        rec.run_id,
                        exc_info=True,
                    )
                    self.forget(rec)


HEARTBEAT = Heartbeat()
