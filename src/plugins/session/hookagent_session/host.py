"""``SessionHost``: one agent's sessions in this process, and the dispatcher that runs them.

The host owns the agent built from its configuration, the inbox log, and one task group in
which a driver per owned session runs that session's commands (``driver.py``). A session
is owned by at most one live replica: the owner lease is a writer lease in the inbox log
(renewed while owned, released when the session has nothing left to run), so a replica that
dies hands its sessions over once its lease expires. Other replicas' submits are found by
polling the inbox heads of the sessions this host knows (those it touched, and every
session of the users it serves) every ``poll_interval``; this process's submits wake the
dispatcher at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hookagent import Agent, AgentConfig, ConfigurationError, RunEvent
from hookagent.messages import new_id
from hookagent.sessionlog import LogEvent, SessionLog, open_session_log
from hookagent.store.ids import check_id

from .errors import HostNotRunning
from .fold import InboxState
from .model import TaskView
from .session import AgentSession

T = TypeVar("T")


class SessionHost:
    """The sessions of one agent configuration in this process (an async context manager).

    ``config`` must name a session log (``AgentConfig(session_log=...)``): a command's run
    is the log's writer under a run_id derived from the command, which is what makes a
    command run at most once across replicas. ``inbox`` is a second session log (a URL of
    the same backend family with its own prefix/database, or a ``SessionLog``); every
    replica of the service names the same one. ``users``: the users whose sessions this host
    discovers by polling (sessions touched through ``session()`` are known anyway).
    ``dispatch=False`` makes a client-only host: it records commands and reads views, and
    never runs anything (another process's host does).
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        inbox: str | SessionLog,
        replica_id: str | None = None,
        users: Iterable[str] = (),
        dispatch: bool = True,
        poll_interval: float = 1.0,
        owner_lease: float = 15.0,
        append_timeout: float = 30.0,
        max_concurrent_runs: int = 64,
        inbox_options: Mapping[str, Any] | None = None,
    ) -> None:
        if config.session_log is None:
            raise ConfigurationError(
                "SessionHost needs AgentConfig(session_log=...): the session log is what "
                "fences a command's run (install hookagent-session-log and name a log)"
            )
        for name, value, low in (
            ("poll_interval", poll_interval, 0.01),
            ("owner_lease", owner_lease, 1.0),
            ("append_timeout", append_timeout, 0.1),
        ):
            if type(value) not in (int, float) or not low <= value <= 3600:
                raise ConfigurationError(f"SessionHost: {name} is seconds in [{low}, 3600]")
        if type(max_concurrent_runs) is not int or max_concurrent_runs < 1:
            raise ConfigurationError("SessionHost: max_concurrent_runs is an int >= 1")
        self.config = config
        self.replica_id = check_id(replica_id or f"replica-{new_id()}", "replica_id")
        self.dispatch = dispatch
        self.poll_interval = float(poll_interval)
        self.owner_lease = float(owner_lease)
        self.append_timeout = float(append_timeout)
        self.max_concurrent_runs = max_concurrent_runs
        self._inbox_spec = inbox
        self._inbox_options = dict(inbox_options or {})
        self._users: set[str] = {check_id(u, "user_id", allow_empty=True) for u in users}
        self.agent: Agent = config.build()
        self._tg: TaskGroup | None = None
        self._portal: BlockingPortal | None = None
        self._portal_cm: Any = None
        self._serving: Any = None
        self._stop = anyio.Event()
        self._core: Any = None  # the running machinery (``_Core``), set while entered

    @property
    def agent_id(self) -> str:
        return self.agent.agent_id

    def __repr__(self) -> str:
        return f"<SessionHost agent={self.agent_id!r} replica={self.replica_id!r}>"

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> SessionHost:
        from .core import Core

        log = self._inbox_spec
        if isinstance(log, str):
            log = await open_session_log(
                log, plugin_manager=self.agent.kernel.pm, **self._inbox_options
            )
        core = Core(self, log, owns_log=isinstance(self._inbox_spec, str))
        await core.start()
        self._core = core
        return self

    async def __aexit__(self, *exc: object) -> None:
        core, self._core = self._core, None
        if core is not None:
            await core.stop()

    def session(self, user_id: str, session_id: str) -> AgentSession:
        """The handle on one session (``InvalidIdentifier`` for an unusable id)."""
        check_id(user_id, "user_id", allow_empty=True)
        check_id(session_id, "session_id")
        return AgentSession(self, user_id, session_id)

    def serve(self, user_id: str) -> None:
        """Discover this user's sessions by polling the inbox (commands other replicas or
        clients recorded); a host serves the users named at construction and these."""
        self._users.add(check_id(user_id, "user_id", allow_empty=True))
        if self._core is not None:
            self._core.wake_discovery()

    @property
    def users(self) -> frozenset[str]:
        return frozenset(self._users)

    def owned_sessions(self) -> list[tuple[str, str]]:
        """The (user_id, session_id) this replica drives now (for operators and tests)."""
        owned: list[tuple[str, str]] = self._require().owned()
        return owned

    # ------------------------------------------------------------------ sync use
    def start_sync(self) -> SessionHost:
        """Run the host in a background thread (for sync code: ``session.submit_sync``)."""
        if self._portal is not None:
            return self
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._serving, _ = self._portal.start_task(self._serve)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            self._portal = self._portal_cm = None
            raise
        return self

    async def _serve(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        self._stop = anyio.Event()
        async with self:  # entered and left in one task, as a task group must be
            task_status.started()
            await self._stop.wait()

    def stop_sync(self) -> None:
        portal, cm = self._portal, self._portal_cm
        if portal is None:
            return
        try:
            portal.call(self._stop.set)
            self._serving.result()
        finally:
            self._portal = self._portal_cm = None
            cm.__exit__(None, None, None)

    def __enter__(self) -> SessionHost:
        return self.start_sync()

    def __exit__(self, *exc: object) -> None:
        self.stop_sync()

    def _sync(self, fn: Callable[..., Awaitable[T]], *args: Any, **kw: Any) -> T:
        if self._portal is None:
            raise HostNotRunning(
                "sync calls need the host started with start_sync() (or `with host:`)"
            )

        async def call() -> T:
            return await fn(*args, **kw)

        return self._portal.call(call)

    # ------------------------------------------------------------------ for AgentSession
    def _require(self) -> Any:
        if self._core is None:
            raise HostNotRunning(f"{self!r} is not running: enter it with `async with host:`")
        return self._core

    async def _submit(
        self, session: AgentSession, kind: str, payload: dict[str, Any], key: str | None
    ) -> TaskView:
        view: TaskView = await self._require().submit(session, kind, payload, key)
        return view

    async def _inbox_state(self, session: AgentSession) -> InboxState:
        state: InboxState = await self._require().state(session.user_id, session.session_id)
        return state

    async def _wait(
        self, session: AgentSession, command_id: str, timeout: float | None
    ) -> TaskView:
        view: TaskView = await self._require().wait(session, command_id, timeout)
        return view

    async def _log_events(
        self, session: AgentSession, after: int, follow: bool, poll: float | None
    ) -> AsyncIterator[LogEvent]:
        async for e in self._require().log_events(session, after, follow, poll):
            yield e

    async def _live_events(self, session: AgentSession, run_id: str) -> AsyncIterator[RunEvent]:
        async for e in self._require().live_events(session, run_id):
            yield e
