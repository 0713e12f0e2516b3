"""The trusted task contract on an agent's sessions: ``TaskAdmin``.

Each method applies one rule of ``contract`` to one slot and saves it at once through
``Agent.update_agent_state`` (under the session's gate, a compare-and-set save). A rule that
refuses raises before anything is saved; a rule with nothing to change saves nothing. When
another process saved the slot in between, the save's ``VersionConflict`` makes the change
run again on the fresh state, where ``expected_revision`` then says what moved: the caller
always sees a ``TaskRevisionConflict``, never a lost update.

Never offer these methods to the model: they are what makes a requirement confirmed or a
check recorded. The plugin refuses a configuration that registers one as a tool.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hookagent import Agent, RuntimeContext, emit_event
from hookagent.errors import VersionConflict
from hookagent.state import AgentState

from . import contract
from .errors import TasksError
from .guard import trusted
from .model import SECTION, Decision, Requirement, TasksContext, TaskScope, VerificationReport
from .sections import read, write
from .todos import replace_todos

log = logging.getLogger("hookagent.tasks")
T = TypeVar("T")
Who = str | RuntimeContext
"""A user_id (with ``session_id=``) or a context naming the slot."""


class _Unchanged(Exception):
    """Raised inside the mutation to skip the save when the rule changed nothing."""


class TaskAdmin:
    """Trusted operations on ``tasks_context``; every method has a ``*_sync`` twin.

    ``retries`` bounds how often a change is re-run after a concurrent save elsewhere.
    """

    def __init__(self, agent: Agent, *, retries: int = 3) -> None:
        self.agent = agent
        self.retries = retries

    # ------------------------------------------------------------------ reading
    async def get(self, who: Who, *, session_id: str | None = None) -> TasksContext:
        """The slot's committed section (empty when the slot or the section is absent)."""
        user, session = _slot(who, session_id)
        return read(await self.agent.get_agent_state(user, session))

    # ------------------------------------------------------------------ the contract
    @trusted
    async def begin_task(
        self,
        who: Who,
        scope: TaskScope,
        *,
        expected_revision: int,
        session_id: str | None = None,
    ) -> TasksContext:
        """Start the task (see ``contract.begin_task``); creates the slot if needed."""
        return await self._apply(
            who,
            session_id,
            "tasks.begin_task",
            lambda tc: contract.begin_task(tc, scope, expected_revision=expected_revision),
        )

    @trusted
    async def propose(
        self,
        who: Who,
        kind: str,
        text: str,
        source_ref: str,
        *,
        expected_revision: int,
        session_id: str | None = None,
    ) -> Requirement:
        """Add a CANDIDATE as the application (deduplicated like the model's proposals)."""
        found: list[Requirement] = []

        def rule(tc: TasksContext) -> TasksContext:
            new, req = contract.propose_requirement(
                tc, kind, text, source_ref, expected_revision=expected_revision
            )
            found[:] = [req]
            return new

        await self._apply(who, session_id, "tasks.propose", rule)
        return found[0]

    @trusted
    async def decide(
        self,
        who: Who,
        requirement_id: str,
        status: str,
        decision: Decision,
        *,
        expected_revision: int,
        session_id: str | None = None,
    ) -> TasksContext:
        """Confirm or reject a requirement. Confirmation establishes authority, not
        satisfaction or verification."""
        return await self._apply(
            who,
            session_id,
            "tasks.decide",
            lambda tc: contract.decide(
                tc, requirement_id, status, decision, expected_revision=expected_revision
            ),
        )

    @trusted
    async def set_subject_version(
        self, who: Who, version: str, *, expected_revision: int, session_id: str | None = None
    ) -> TasksContext:
        return await self._apply(
            who,
            session_id,
            "tasks.set_subject_version",
            lambda tc: contract.set_subject_version(
                tc, version, expected_revision=expected_revision
            ),
        )

    @trusted
    async def invalidate_subject(
        self, who: Who, *, expected_revision: int, session_id: str | None = None
    ) -> TasksContext:
        return await self._apply(
            who,
            session_id,
            "tasks.invalidate_subject",
            lambda tc: contract.invalidate_subject(tc, expected_revision=expected_revision),
        )

    @trusted
    async def record_verification(
        self,
        who: Who,
        report: VerificationReport,
        *,
        expected_revision: int,
        session_id: str | None = None,
    ) -> TasksContext:
        """Record a check bound to the current evidence binding (see ``verifiers``)."""
        return await self._apply(
            who,
            session_id,
            "tasks.record_verification",
            lambda tc: contract.record_verification(
                tc, report, expected_revision=expected_revision
            ),
        )

    @trusted
    async def write_todos(
        self,
        who: Who,
        todos: Sequence[dict[str, Any]],
        *,
        expected_revision: int,
        session_id: str | None = None,
    ) -> TasksContext:
        """Replace the todo list as the application (``todo_write``'s rules)."""

        def rule(tc: TasksContext) -> TasksContext:
            contract.check_revision(tc, expected_revision)
            return replace_todos(tc, list(todos))

        return await self._apply(who, session_id, "tasks.write_todos", rule)

    # ------------------------------------------------------------------ the save
    async def _apply(
        self,
        who: Who,
        session_id: str | None,
        reason: str,
        rule: Callable[[TasksContext], TasksContext],
    ) -> TasksContext:
        if isinstance(who, RuntimeContext) and who.agent_state is not None:
            raise TasksError(
                "TaskAdmin was called with the context of a running call: that call holds "
                "the session until it ends, so this would wait for itself; call it after "
                "the call returns"
            )
        user, session = _slot(who, session_id)
        result: list[TasksContext] = []

        def mutation(state: AgentState) -> None:
            before = read(state)
            after = rule(before)
            result[:] = [after]
            if after is before:
                raise _Unchanged
            write(state, after)

        for attempt in range(self.retries + 1):
            try:
                await self.agent.update_agent_state(
                    user, reason, mutation, session_id=session, create=True
                )
            except _Unchanged:
                return result[0]
            except VersionConflict:
                if attempt == self.retries:
                    raise
                log.info("%s on (%r, %r): saved elsewhere meanwhile, again", reason, user, session)
                continue
            break
        log.info("%s on (%r, %r): revision %d", reason, user, session, result[0].revision)
        if isinstance(who, RuntimeContext):  # a running call's (other session's) context
            await emit_event(
                who,
                "task_changed",
                section=SECTION,
                revision=result[0].revision,
                change=reason.removeprefix("tasks."),
                session_id=session,
            )
        return result[0]

    # ------------------------------------------------------------------ sync twins
    def run_sync(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run the coroutine function ``fn(*args, **kwargs)`` on the agent's sync portal."""
        return self.agent.kernel.portal().call(functools.partial(fn, *args, **kwargs))

    def get_sync(self, who: Who, *, session_id: str | None = None) -> TasksContext:
        return self.run_sync(self.get, who, session_id=session_id)  # type: ignore[no-any-return]

    @trusted
    def begin_task_sync(self, who: Who, scope: TaskScope, **kw: Any) -> TasksContext:
        return self.run_sync(self.begin_task, who, scope, **kw)  # type: ignore[no-any-return]

    @trusted
    def propose_sync(
        self, who: Who, kind: str, text: str, source_ref: str, **kw: Any
    ) -> Requirement:
        return self.run_sync(self.propose, who, kind, text, source_ref, **kw)  # type: ignore[no-any-return]

    @trusted
    def decide_sync(
        self, who: Who, requirement_id: str, status: str, decision: Decision, **kw: Any
    ) -> TasksContext:
        return self.run_sync(self.decide, who, requirement_id, status, decision, **kw)  # type: ignore[no-any-return]

    @trusted
    def set_subject_version_sync(self, who: Who, version: str, **kw: Any) -> TasksContext:
        return self.run_sync(self.set_subject_version, who, version, **kw)  # type: ignore[no-any-return]

    @trusted
    def invalidate_subject_sync(self, who: Who, **kw: Any) -> TasksContext:
        return self.run_sync(self.invalidate_subject, who, **kw)  # type: ignore[no-any-return]

    @trusted
    def record_verification_sync(
        self, who: Who, report: VerificationReport, **kw: Any
    ) -> TasksContext:
        return self.run_sync(self.record_verification, who, report, **kw)  # type: ignore[no-any-return]

    @trusted
    def write_todos_sync(
        self, who: Who, todos: Sequence[dict[str, Any]], **kw: Any
    ) -> TasksContext:
        return self.run_sync(self.write_todos, who, todos, **kw)  # type: ignore[no-any-return]


def _slot(who: Who, session_id: str | None) -> tuple[str, str | None]:
    if isinstance(who, RuntimeContext):
        return who.user_id, session_id or who.session_id
    if not isinstance(who, str):
        raise TasksError(
            f"name the slot with a user_id or a RuntimeContext, got {type(who).__name__}"
        )
    return who, session_id
