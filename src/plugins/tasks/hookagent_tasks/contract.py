"""The task contract's rules as pure functions of the section: each returns the new section.

Each function checks ``expected_revision`` first (a typed conflict when the section moved),
then every rule and limit, and only then builds a new value: a refusal changes nothing. A
function that has nothing to change returns the section it was given (the same object), so
the caller can skip the save.

These are the *trusted* operations: the application (or a person through the CLI) calls
them; the model never can (see ``guard``). Only ``propose_requirement`` has a model tool
(``task_requirement_propose``), and it only ever creates CANDIDATEs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import attrs

from .errors import (
    BindingMismatch,
    InvalidDecision,
    InvalidProposal,
    InvalidVerification,
    RequirementNotConfirmed,
    RequirementNotFound,
    TaskArgumentError,
    TaskLimitExceeded,
    TaskRevisionConflict,
    TaskScopeError,
)
from .guard import trusted
from .model import (
    AUTHORITIES,
    KINDS,
    MAX_ID,
    MAX_OBJECTIVE,
    MAX_REASON,
    MAX_REQUIREMENT_TEXT,
    MAX_REQUIREMENTS,
    MAX_SOURCE_REF,
    MAX_SUBJECT_VERSION,
    MAX_TASK_ID,
    MAX_VERIFICATIONS,
    OUTCOMES,
    Binding,
    Decision,
    Requirement,
    RequirementStatus,
    TasksContext,
    TaskScope,
    VerificationReport,
)

Clock = Callable[[], float]
_REQ_ID = re.compile(r"^R(\d+)$")


def check_revision(tc: TasksContext, expected_revision: Any) -> None:
    if type(expected_revision) is not int:
        raise TaskArgumentError(
            f"expected_revision must be an int (the revision you read), got "
            f"{type(expected_revision).__name__}"
        )
    if expected_revision != tc.revision:
        raise TaskRevisionConflict(expected_revision, tc.revision)


def text(
    value: Any, name: str, limit: int, *, blank: bool = False, error: type = TaskArgumentError
) -> str:
    """A string argument within ``limit`` characters (non-blank unless ``blank``)."""
    if not isinstance(value, str):
        raise error(f"{name} must be a string, got {type(value).__name__}")
    if not blank and not value.strip():
        raise error(f"{name} must not be blank")
    if len(value) > limit:
        raise TaskLimitExceeded(f"{name}: {len(value)} characters, at most {limit}")
    return value


def require_scope(tc: TasksContext, what: str) -> TaskScope:
    if tc.scope is None:
        raise TaskScopeError(f"{what} needs a task: the application calls begin_task first")
    return tc.scope


def _bump(tc: TasksContext, **changes: Any) -> TasksContext:
    return attrs.evolve(tc, revision=tc.revision + 1, **changes)


@trusted
def begin_task(tc: TasksContext, scope: TaskScope, *, expected_revision: int) -> TasksContext:
    """Start (or confirm) the task the section is about.

    The same scope again is a no-op. A task_id already in use with another objective is
    refused. Otherwise todos, requirements, verifications and the subject version are
    cleared, and the contract version and the revision bump.
    """
    check_revision(tc, expected_revision)
    if not isinstance(scope, TaskScope):
        raise TaskArgumentError(f"scope must be a TaskScope, got {type(scope).__name__}")
    text(scope.task_id, "scope.task_id", MAX_TASK_ID)
    text(scope.objective, "scope.objective", MAX_OBJECTIVE)
    text(scope.source_ref, "scope.source_ref", MAX_SOURCE_REF, blank=True)
    current = tc.scope
    if current == scope:
        return tc
    if (
        current is not None
        and current.task_id == scope.task_id
        and current.objective != scope.objective
    ):
        raise TaskScopeError(
            f"task_id {scope.task_id!r} is in use with another objective; begin a new task "
            "with a new task_id"
        )
    return _bump(
        tc,
        tasks=(),
        requirements=(),
        verifications=(),
        subject_version=None,
        scope=scope,
        objective=scope.objective,
        contract_version=tc.contract_version + 1,
    )


def next_requirement_id(tc: TasksContext) -> str:
    numbers = [int(m.group(1)) for r in tc.requirements if (m := _REQ_ID.match(r.id))]
    return f"R{max(numbers, default=0) + 1}"


def propose_requirement(
    tc: TasksContext,
    kind: Any,
    text_: Any,
    source_ref: Any,
    *,
    expected_revision: int | None = None,
    now: Clock = time.time,
) -> tuple[TasksContext, Requirement]:
    """Add a CANDIDATE requirement (or return the same proposal made before: deduplicated by
    kind, text and source_ref, whatever its status). ``expected_revision`` None skips the check
    (the model's tool has none)."""
    if expected_revision is not None:
        check_revision(tc, expected_revision)
    if kind not in KINDS:
        raise InvalidProposal(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not isinstance(text_, str):
        raise InvalidProposal(f"text must be a string, got {type(text_).__name__}")
    body = text(" ".join(text_.split()), "text", MAX_REQUIREMENT_TEXT, error=InvalidProposal)
    ref = text(source_ref, "source_ref", MAX_SOURCE_REF, error=InvalidProposal).strip()
    require_scope(tc, "a requirement proposal")
    for existing in tc.requirements:
        if (existing.kind, existing.text, existing.source_ref) == (kind, body, ref):
            return tc, existing
    if len(tc.requirements) >= MAX_REQUIREMENTS:
        raise TaskLimitExceeded(f"the task has {MAX_REQUIREMENTS} requirements, the most allowed")
    req = Requirement(next_requirement_id(tc), kind, body, "CANDIDATE", ref, None, now())
    return _bump(tc, requirements=(*tc.requirements, req)), req


@trusted
def decide(
    tc: TasksContext,
    requirement_id: str,
    status: str,
    decision: Decision,
    *,
    expected_revision: int,
    now: Clock = time.time,
) -> TasksContext:
    """Confirm or reject a requirement (trusted callers only).

    Confirmation establishes authority, not satisfaction or verification. A requirement that
    is no longer CONFIRMED loses its verification reports. The same decision again is a no-op.
    """
    check_revision(tc, expected_revision)
    if status not in ("CONFIRMED", "REJECTED"):
        raise InvalidDecision(f"status {status!r} is not CONFIRMED or REJECTED")
    if not isinstance(decision, Decision):
        raise InvalidDecision(f"decision must be a Decision, got {type(decision).__name__}")
    if decision.authority not in AUTHORITIES:
        raise InvalidDecision(
            f"decision.authority {decision.authority!r} is not one of {', '.join(AUTHORITIES)}"
        )
    text(decision.source_ref, "decision.source_ref", MAX_SOURCE_REF, error=InvalidDecision)
    req = tc.requirement(requirement_id)
    if req is None:
        known = ", ".join(r.id for r in tc.requirements) or "none"
        raise RequirementNotFound(f"no requirement {requirement_id!r} (known: {known})")
    old = req.decision
    if (
        req.status == status
        and old is not None
        and (old.authority, old.source_ref)
        == (
            decision.authority,
            decision.source_ref,
        )
    ):
        return tc
    stamped = attrs.evolve(decision, decided_at=decision.decided_at or now())
    decided: RequirementStatus = "CONFIRMED" if status == "CONFIRMED" else "REJECTED"
    new = attrs.evolve(req, status=decided, decision=stamped)
    reports = tc.verifications
    if status != "CONFIRMED":
        reports = tuple(v for v in reports if v.requirement_id != requirement_id)
    return _bump(
        tc,
        requirements=tuple(new if r.id == requirement_id else r for r in tc.requirements),
        verifications=reports,
    )


@trusted
def set_subject_version(tc: TasksContext, version: str, *, expected_revision: int) -> TasksContext:
    """Name the version of the work that evidence is about (a commit, a build, a hash).

    Reports recorded for another version stay in the section but are no longer current.
    """
    check_revision(tc, expected_revision)
    text(version, "subject_version", MAX_SUBJECT_VERSION)
    require_scope(tc, "set_subject_version")
    if tc.subject_version == version:
        return tc
    return _bump(tc, subject_version=version)


@trusted
def invalidate_subject(tc: TasksContext, *, expected_revision: int) -> TasksContext:
    """The work changed in a way no version names: no evidence is current until a new
    ``set_subject_version``."""
    check_revision(tc, expected_revision)
    require_scope(tc, "invalidate_subject")
    if tc.subject_version is None:
        return tc
    return _bump(tc, subject_version=None)


@trusted
def record_verification(
    tc: TasksContext,
    report: VerificationReport,
    *,
    expected_revision: int,
    now: Clock = time.time,
) -> TasksContext:
    """Record one check of a CONFIRMED acceptance criterion, bound to the current evidence
    binding; it replaces that requirement's previous report. PASSED is not a verdict on
    overall completion."""
    check_revision(tc, expected_revision)
    if not isinstance(report, VerificationReport):
        raise InvalidVerification(
            f"report must be a VerificationReport, got {type(report).__name__}"
        )
    for name in ("id", "action_id", "verifier_id"):
        text(getattr(report, name), f"report.{name}", MAX_ID, error=InvalidVerification)
    if report.outcome not in OUTCOMES:
        raise InvalidVerification(
            f"report.outcome {report.outcome!r} is not one of {', '.join(OUTCOMES)}"
        )
    text(report.reason, "report.reason", MAX_REASON, blank=True, error=InvalidVerification)
    require_scope(tc, "record_verification")
    current = tc.binding
    if tc.subject_version is None:
        raise BindingMismatch(
            "no subject version is set: evidence must name the version it checked "
            "(set_subject_version first)"
        )
    if not isinstance(report.binding, Binding) or report.binding != current:
        raise BindingMismatch(
            f"the report is bound to {report.binding!r}, the current binding is {current!r}: "
            "the evidence is about another task, contract or subject version"
        )
    req = tc.requirement(report.requirement_id)
    if req is None:
        raise RequirementNotFound(f"no requirement {report.requirement_id!r}")
    if req.status != "CONFIRMED" or req.kind != "ACCEPTANCE_CRITERION":
        raise RequirementNotConfirmed(
            f"requirement {req.id!r} is a {req.status} {req.kind}: only a CONFIRMED "
            "ACCEPTANCE_CRITERION can be verified"
        )
    others = tuple(v for v in tc.verifications if v.requirement_id != req.id)
    if len(others) >= MAX_VERIFICATIONS:
        raise TaskLimitExceeded(f"{MAX_VERIFICATIONS} verification reports are kept at most")
    stamped = report if report.recorded_at is not None else attrs.evolve(report, recorded_at=now())
    return _bump(tc, verifications=(*others, stamped))
