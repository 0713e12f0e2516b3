"""The kernel events of the runs executing in this process, for any number of subscribers.

``AgentRun.events()`` may be subscribed once; the dispatcher subscribes, keeps each live
run's events while it runs, and lets every ``live_events`` subscriber read them from the
start. A run's buffer is dropped when the run ends (subscribers still reading get the rest).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
from hookagent import AgentRun, RunEvent

from .errors import UnknownRun


class LiveRun:
    """One executing run's events as they come."""

    def __init__(self, run: AgentRun) -> None:
        self.run = run
        self.events: list[RunEvent] = []
        self.ended = False
        self._added = anyio.Event()

    async def pump(self, on_event: Callable[[RunEvent], None]) -> None:
        """Read the run's events until it ends (the dispatcher's task)."""
        try:
            async for event in self.run.events():
                self.events.append(event)
                on_event(event)
                self._wake()
        finally:
            self.ended = True
            self._wake()

    def _wake(self) -> None:
        self._added.set()
        self._added = anyio.Event()

    async def follow(self) -> AsyncIterator[RunEvent]:
        i = 0
        while True:
            while i < len(self.events):
                yield self.events[i]
                i += 1
            if self.ended:
                return
            await self._added.wait()


class LiveRuns:
    """The live runs by (user_id, session_id, run_id)."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str, str], LiveRun] = {}

    def add(self, user_id: str, session_id: str, run: AgentRun) -> LiveRun:
        live = LiveRun(run)
        self._runs[(user_id, session_id, run.run_id)] = live
        return live

    def drop(self, user_id: str, session_id: str, run_id: str) -> None:
        self._runs.pop((user_id, session_id, run_id), None)

    def get(self, user_id: str, session_id: str, run_id: str) -> LiveRun | None:
        return self._runs.get((user_id, session_id, run_id))

    def follow(self, user_id: str, session_id: str, run_id: str) -> AsyncIterator[RunEvent]:
        live = self._runs.get((user_id, session_id, run_id))
        if live is None:
            raise UnknownRun(
                f"run {run_id!r} of user_id={user_id!r} session_id={session_id!r} is not "
                "executing in this process (read the session log's events instead)"
            )
        return live.follow()
