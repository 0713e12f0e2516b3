"""The ``tasks_context`` section: its values and limits (the JSON is ``sectionjson``).

Field names are the reference's (AgentScope's ``tasks_context``) so a state exported to it and
imported back keeps its meaning. Values are frozen: every rule builds a new section and the
caller stores it only when the rule accepted the change, so a refusal changes nothing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs

SECTION = "tasks_context"
"""The state section this plugin owns."""

TaskState: TypeAlias = Literal["pending", "in_progress", "completed"]
Priority: TypeAlias = Literal["high", "medium", "low"]
RequirementKind: TypeAlias = Literal["CONSTRAINT", "ACCEPTANCE_CRITERION"]
RequirementStatus: TypeAlias = Literal["CANDIDATE", "CONFIRMED", "REJECTED"]
Authority: TypeAlias = Literal["USER", "CALLER"]
Outcome: TypeAlias = Literal["PASSED", "FAILED", "UNKNOWN", "ERROR"]

TASK_STATES: tuple[TaskState, ...] = ("pending", "in_progress", "completed")
PRIORITIES: tuple[Priority, ...] = ("high", "medium", "low")
KINDS: tuple[RequirementKind, ...] = ("CONSTRAINT", "ACCEPTANCE_CRITERION")
STATUSES: tuple[RequirementStatus, ...] = ("CANDIDATE", "CONFIRMED", "REJECTED")
AUTHORITIES: tuple[Authority, ...] = ("USER", "CALLER")
OUTCOMES: tuple[Outcome, ...] = ("PASSED", "FAILED", "UNKNOWN", "ERROR")

# the reference's limits
MAX_TASK_ID = 200
MAX_OBJECTIVE = 4_000
MAX_SOURCE_REF = 2_000
MAX_REQUIREMENT_TEXT = 2_000
MAX_REQUIREMENTS = 64
MAX_VERIFICATIONS = 64
# ours (the reference leaves these open; a model must not grow the section without bound)
MAX_TODOS = 100
MAX_TODO_CONTENT = 2_000
MAX_ID = 200
MAX_REASON = 2_000
MAX_SUBJECT_VERSION = 200

HEX32 = re.compile(r"^[0-9a-f]{32}$")
"""A task id: 32 lowercase hex digits."""


@attrs.frozen
class Task:
    """One todo: ``subject`` is what ``todo_write`` calls ``content``; priority in metadata."""

    id: str
    subject: str
    state: TaskState = "pending"
    description: str = ""
    created_at: str | float | None = None
    """The reference's UTC ``"YYYY-MM-DD HH:MM:SS.mmm"`` (numbers are read too)."""
    owner: str | None = None
    blocks: tuple[str, ...] = ()
    blocked_by: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    extra: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    """Keys this plugin does not model, written back unchanged."""

    @property
    def priority(self) -> str | None:
        value = self.metadata.get("priority")
        return value if isinstance(value, str) else None


@attrs.frozen
class TaskScope:
    """What the trusted caller says the task is (``begin_task``; JSON key ``task_scope``)."""

    task_id: str
    objective: str
    source_ref: str = ""


@attrs.frozen
class Decision:
    """Who confirmed or rejected a requirement, and on what grounds.

    Confirmation establishes authority, not satisfaction or verification.
    """

    authority: Authority
    source_ref: str
    decided_at: float | None = None


@attrs.frozen
class Requirement:
    id: str
    kind: RequirementKind
    text: str
    status: RequirementStatus = "CANDIDATE"
    source_ref: str = ""
    decision: Decision | None = None
    """Present iff ``status`` is not CANDIDATE."""
    created_at: float | None = None


@attrs.frozen
class Binding:
    """What a piece of evidence is about: this task, this contract, this subject version."""

    task_id: str
    contract_version: int
    subject_version: str | None


@attrs.frozen
class VerificationReport:
    """One recorded check. PASSED is not a verdict on overall completion."""

    id: str
    requirement_id: str
    action_id: str
    verifier_id: str
    outcome: Outcome
    reason: str
    binding: Binding
    recorded_at: float | None = None


@attrs.frozen
class TasksContext:
    tasks: tuple[Task, ...] = ()
    revision: int = 0
    objective: str | None = None
    scope: TaskScope | None = None
    contract_version: int = 0
    subject_version: str | None = None
    requirements: tuple[Requirement, ...] = ()
    verifications: tuple[VerificationReport, ...] = ()
    extra: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def binding(self) -> Binding | None:
        """The evidence binding now (None before a task has begun)."""
        if self.scope is None:
            return None
        return Binding(self.scope.task_id, self.contract_version, self.subject_version)

    def requirement(self, requirement_id: str) -> Requirement | None:
        return next((r for r in self.requirements if r.id == requirement_id), None)

    def is_current(self, report: VerificationReport) -> bool:
        """The report's evidence is about the task, contract and subject version of now."""
        return report.binding == self.binding


def reference_now() -> str:
    """Now in the reference's timestamp format (UTC, milliseconds)."""
    when = dt.datetime.now(dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"
