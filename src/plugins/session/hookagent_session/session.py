"""``AgentSession``: one (user, agent, session)'s commands, task views and events.

Every command goes into the session's durable inbox first (``submit``, ``resume`` and
``respond`` queue and run one at a time in inbox order; ``steer`` and ``interrupt`` act on
the running run at once) and returns its ``TaskView``; the host's dispatcher (in this
process or another replica) runs it. ``wait`` follows a command to its final status;
``events`` streams the session log, resumable by seq.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hookagent import PendingInteraction, RunEvent
from hookagent.sessionlog import LogEvent
from hookagent.turns import Answer

from .model import MsgInput, TaskStatus, TaskView

if TYPE_CHECKING:
    from .host import SessionHost


class AgentSession:
    """Commands for one session of one user on the host's agent (``host.session(u, s)``).

    Cheap to create and hold no resources; any number may exist for one session, in any
    process sharing the inbox: the inbox is the authority.
    """

    def __init__(self, host: SessionHost, user_id: str, session_id: str) -> None:
        self.host = host
        self.user_id = user_id
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"<AgentSession user_id={self.user_id!r} session_id={self.session_id!r}>"

    @property
    def agent_id(self) -> str:
        return self.host.agent_id

    # ------------------------------------------------------------------ commands
    async def submit(self, input: MsgInput, *, idempotency_key: str | None = None) -> TaskView:
        """Queue new input: it runs after every earlier command of the session has ended.

        The same ``idempotency_key`` is accepted once: resending it returns the first
        command's current view (whatever its status); resending it with other content
        raises ``IdempotencyConflict``. Without a key, every call is a new command. A
        submit reaching a turn suspended on a question supersedes it (the kernel's rule:
        the pending calls are denied and the input starts a new turn).
        """
        return await self.host._submit(self, "submit", {"input": input}, idempotency_key)

    async def resume(
        self, turn_id: str, *, input: MsgInput | None = None, idempotency_key: str | None = None
    ) -> TaskView:
        """Continue the session's latest turn, ``turn_id``, under a new run (after an
        interrupt, a failure or a dead replica). Queued like ``submit``; when its turn comes
        it is ``rejected`` unless ``turn_id`` is the latest turn, unfinished, with no pending
        interaction (answer it with ``respond``) and no uncertain tool call. ``input``
        (default: a short "continue" user message) is what the model is told."""
        payload: dict[str, Any] = {"turn_id": turn_id, "input": input}
        return await self.host._submit(self, "resume", payload, idempotency_key)

    async def respond(
        self,
        request_id: str,
        answer: Answer | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> TaskView:
        """Answer a pending interaction (``request_id`` is its tool_use_id): ``Approve``,
        ``Reject``, ``ExternalResult`` or their JSON form ``{"kind": "approve", "remember":
        false}`` / ``{"kind": "reject", "reason": ...}`` / ``{"kind": "external_result",
        "output": ..., "state": "success"}``. Queued; it continues the suspended turn under a
        new run (the answer is not replayed as chat); ``rejected`` when its turn comes and the
        request is no longer pending. Several pending requests: one respond each (the turn
        goes on when the last is answered)."""
        payload = {"request_id": request_id, "answer": answer}
        return await self.host._submit(self, "respond", payload, idempotency_key)

    async def steer(self, input: MsgInput, *, idempotency_key: str | None = None) -> TaskView:
        """Redirect the running run: it is interrupted and ``input`` runs next, ahead of the
        queue, as a run continuing the same turn. Raises ``NotRunning`` when no run of the
        session is running; a steer recorded just as the run ended is ``rejected``."""
        return await self.host._submit(self, "steer", {"input": input}, idempotency_key)

    async def interrupt(
        self, expected_run_id: str | None = None, *, idempotency_key: str | None = None
    ) -> TaskView:
        """Interrupt the running run (its command ends ``interrupted``; queued commands go
        on). With ``expected_run_id`` (the run the caller saw, e.g. from
        ``SESSION_RUN_STARTED``) a different running run is never stopped: ``StaleRun``.
        Raises ``NotRunning`` when nothing runs. The returned view is the interrupt
        command's; it is ``completed`` once the run was told to stop."""
        payload = {"expected_run_id": expected_run_id}
        return await self.host._submit(self, "interrupt", payload, idempotency_key)

    async def cancel(self, command_id: str) -> TaskView:
        """Withdraw a queued command before it runs (it ends ``rejected`` with
        ``error_type == "Cancelled"``; again: the same view). ``CommandRejected`` once it started or ended (``interrupt`` a
        running one), ``UnknownCommand`` for an id this session never had."""
        view: TaskView = await self.host._require().cancel(self, command_id)
        return view

    # ------------------------------------------------------------------ views
    async def task(self, command_id: str) -> TaskView:
        """The command's current view (``UnknownCommand`` if the inbox has no such id)."""
        return (await self.host._inbox_state(self)).view(command_id)

    async def tasks(
        self, *, status: TaskStatus | Sequence[TaskStatus] | None = None, after_seq: int = 0
    ) -> list[TaskView]:
        """The session's commands in inbox order (those after ``after_seq``, of ``status``)."""
        return (await self.host._inbox_state(self)).views(status=status, after_seq=after_seq)

    async def current(self) -> TaskView | None:
        """The command whose run is starting or running now, if any."""
        return (await self.host._inbox_state(self)).current()

    async def wait(self, command_id: str, *, timeout: float | None = None) -> TaskView:
        """The command's view once its status is final (``WaitTimeout`` after ``timeout``
        seconds; the command goes on)."""
        return await self.host._wait(self, command_id, timeout)

    async def pending_interactions(self) -> list[PendingInteraction]:
        """What the session's suspended turn waits for (answer each with ``respond``)."""
        return await self.host.agent.pending_interactions(self.user_id, self.session_id)

    # ------------------------------------------------------------------ events
    def events(
        self, after_seq: int = 0, *, follow: bool = True, poll_interval: float | None = None
    ) -> AsyncIterator[LogEvent]:
        """The session log's events after ``after_seq``, in order (durable and shared by the
        replicas: an SSE stream's Last-Event-ID is the last seq it sent). ``follow``: wait
        for new ones (woken by this process's runs, else every ``poll_interval``) until the
        iterator is closed; else stop at the head. ``run/started`` carries the run_id and
        turn_id (the server's ``SESSION_RUN_STARTED``)."""
        return self.host._log_events(self, after_seq, follow, poll_interval)

    def live_events(self, run_id: str) -> AsyncIterator[RunEvent]:
        """The kernel's events (``model_delta``, ``tool_called``, ...) of ``run_id`` while it
        executes in this process, from its start; ``UnknownRun`` if it does not execute here.
        Any number of subscribers; not durable (use ``events`` for what must survive)."""
        return self.host._live_events(self, run_id)

    # ------------------------------------------------------------------ sync twins
    def submit_sync(self, input: MsgInput, *, idempotency_key: str | None = None) -> TaskView:
        return self.host._sync(self.submit, input, idempotency_key=idempotency_key)

    def resume_sync(
        self, turn_id: str, *, input: MsgInput | None = None, idempotency_key: str | None = None
    ) -> TaskView:
        return self.host._sync(self.resume, turn_id, input=input, idempotency_key=idempotency_key)

    def respond_sync(
        self,
        request_id: str,
        answer: Answer | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> TaskView:
        return self.host._sync(self.respond, request_id, answer, idempotency_key=idempotency_key)

    def steer_sync(self, input: MsgInput, *, idempotency_key: str | None = None) -> TaskView:
        return self.host._sync(self.steer, input, idempotency_key=idempotency_key)

    def interrupt_sync(
        self, expected_run_id: str | None = None, *, idempotency_key: str | None = None
    ) -> TaskView:
        return self.host._sync(self.interrupt, expected_run_id, idempotency_key=idempotency_key)

    def cancel_sync(self, command_id: str) -> TaskView:
        return self.host._sync(self.cancel, command_id)

    def task_sync(self, command_id: str) -> TaskView:
        return self.host._sync(self.task, command_id)

    def tasks_sync(
        self, *, status: TaskStatus | Sequence[TaskStatus] | None = None, after_seq: int = 0
    ) -> list[TaskView]:
        return self.host._sync(self.tasks, status=status, after_seq=after_seq)

    def wait_sync(self, command_id: str, *, timeout: float | None = None) -> TaskView:
        return self.host._sync(self.wait, command_id, timeout=timeout)
