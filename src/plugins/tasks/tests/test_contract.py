"""The task contract's rules (harness.md §2 [B]): every mutator checks expected_revision,
every limit is enforced with a typed error, and a refusal changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hookagent_tasks import (
    Binding,
    BindingMismatch,
    Decision,
    InvalidDecision,
    InvalidProposal,
    InvalidVerification,
    RequirementNotConfirmed,
    RequirementNotFound,
    TaskArgumentError,
    TaskLimitExceeded,
    TaskRevisionConflict,
    TasksContext,
    TaskScope,
    TaskScopeError,
    VerificationReport,
    begin_task,
    decide,
    invalidate_subject,
    propose_requirement,
    record_verification,
    replace_todos,
    set_subject_version,
)
from hookagent_tasks.model import MAX_REQUIREMENTS, MAX_VERIFICATIONS

SCOPE = TaskScope("T-1", "ship the release", "ticket 9")
USER = Decision("USER", "chat message 3")


def begun(tc: TasksContext | None = None) -> TasksContext:
    tc = tc or TasksContext()
    return begin_task(tc, SCOPE, expected_revision=tc.revision)


def with_criterion(status: str = "CONFIRMED", kind: str = "ACCEPTANCE_CRITERION") -> TasksContext:
    tc, req = propose_requirement(begun(), kind, "the tests pass", "user said so")
    if status != "CANDIDATE":
        tc = decide(tc, req.id, status, USER, expected_revision=tc.revision)
    return set_subject_version(tc, "v1", expected_revision=tc.revision)


def report(tc: TasksContext, requirement_id: str = "R1", **kw: Any) -> VerificationReport:
    fields: dict[str, Any] = {
        "id": "rep-1",
        "requirement_id": requirement_id,
        "action_id": "act-1",
        "verifier_id": "pytest",
        "outcome": "PASSED",
        "reason": "12 passed",
        "binding": tc.binding,
    }
    fields.update(kw)
    return VerificationReport(**fields)


def refused(fn: Callable[[], Any], tc: TasksContext, error: type[Exception], match: str) -> None:
    snapshot = repr(tc)
    with pytest.raises(error, match=match):
        fn()
    assert repr(tc) == snapshot


# ------------------------------------------------------------------ begin_task


def test_begin_task_sets_scope_and_bumps() -> None:
    tc = begun()
    assert tc.scope == SCOPE and tc.objective == SCOPE.objective
    assert tc.contract_version == 1 and tc.revision == 1
    assert tc.binding == Binding("T-1", 1, None)


def test_the_same_scope_again_is_a_no_op() -> None:
    tc = begun()
    assert (
        begin_task(tc, TaskScope("T-1", "ship the release", "ticket 9"), expected_revision=1) is tc
    )


def test_a_reused_task_id_with_another_objective_is_refused() -> None:
    tc = begun()
    refused(
        lambda: begin_task(tc, TaskScope("T-1", "something else"), expected_revision=1),
        tc,
        TaskScopeError,
        "task_id 'T-1' is in use with another objective",
    )


def test_a_scope_switch_clears_todos_requirements_verifications_and_subject() -> None:
    tc = with_criterion()
    tc = record_verification(tc, report(tc), expected_revision=tc.revision)
    tc = replace_todos(tc, [{"content": "a", "status": "pending"}])
    assert tc.tasks and tc.requirements and tc.verifications and tc.subject_version
    switched = begin_task(tc, TaskScope("T-2", "the next one"), expected_revision=tc.revision)
    assert switched.tasks == () and switched.requirements == () and switched.verifications == ()
    assert switched.subject_version is None
    assert switched.contract_version == tc.contract_version + 1
    assert switched.revision == tc.revision + 1
    # same task_id and objective from another source: a restart, which also clears
    restarted = begin_task(
        tc, TaskScope("T-1", "ship the release", "ticket 10"), expected_revision=tc.revision
    )
    assert restarted.requirements == () and restarted.contract_version == tc.contract_version + 1


@pytest.mark.parametrize(
    ("scope", "error", "match"),
    [
        (TaskScope("", "x"), TaskArgumentError, "scope.task_id must not be blank"),
        (
            TaskScope("t" * 201, "x"),
            TaskLimitExceeded,
            "scope.task_id: 201 characters, at most 200",
        ),
        (TaskScope("t", " "), TaskArgumentError, "scope.objective must not be blank"),
        (TaskScope("t", "o" * 4001), TaskLimitExceeded, "at most 4000"),
        (TaskScope("t", "o", "s" * 2001), TaskLimitExceeded, "at most 2000"),
        (TaskScope("t", "o", 5), TaskArgumentError, "scope.source_ref must be a string"),  # type: ignore[arg-type]
        ("T-1", TaskArgumentError, "scope must be a TaskScope"),
    ],
)
def test_begin_task_limits(scope: Any, error: type[Exception], match: str) -> None:
    tc = TasksContext()
    refused(lambda: begin_task(tc, scope, expected_revision=0), tc, error, match)


def test_begin_task_limits_at_the_edge_pass() -> None:
    tc = begin_task(
        TasksContext(), TaskScope("t" * 200, "o" * 4000, "s" * 2000), expected_revision=0
    )
    assert tc.scope is not None


# ------------------------------------------------------------------ proposals


def test_a_proposal_is_a_candidate_and_deduplicated() -> None:
    tc = begun()
    tc1, req = propose_requirement(tc, "CONSTRAINT", "no new  dependencies", "user message 2")
    assert req.status == "CANDIDATE" and req.decision is None and req.id == "R1"
    assert req.text == "no new dependencies" and tc1.revision == tc.revision + 1
    tc2, again = propose_requirement(tc1, "CONSTRAINT", "no new dependencies", "user message 2")
    assert tc2 is tc1 and again == req
    tc3, other = propose_requirement(tc1, "CONSTRAINT", "no new dependencies", "user message 5")
    assert other.id == "R2" and len(tc3.requirements) == 2
    _, kind = propose_requirement(
        tc3, "ACCEPTANCE_CRITERION", "no new dependencies", "user message 2"
    )
    assert kind.id == "R3"


def test_a_rejected_requirement_is_not_revived_by_proposing_it_again() -> None:
    tc, req = propose_requirement(begun(), "CONSTRAINT", "x", "s")
    tc = decide(tc, req.id, "REJECTED", Decision("CALLER", "review"), expected_revision=tc.revision)
    same, again = propose_requirement(tc, "CONSTRAINT", "x", "s")
    assert same is tc and again.status == "REJECTED"


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("WISH", "x", "s"), InvalidProposal, "kind 'WISH' is not one of"),
        (("constraint", "x", "s"), InvalidProposal, "kind 'constraint'"),
        (("CONSTRAINT", "  ", "s"), InvalidProposal, "text must not be blank"),
        (("CONSTRAINT", None, "s"), InvalidProposal, "text must be a string"),
        (("CONSTRAINT", "x", ""), InvalidProposal, "source_ref must not be blank"),
        (("CONSTRAINT", "x" * 2001, "s"), TaskLimitExceeded, "text: 2001 characters, at most 2000"),
        (("CONSTRAINT", "x", "s" * 2001), TaskLimitExceeded, "source_ref: 2001 characters"),
    ],
)
def test_an_invalid_proposal_mutates_nothing(
    args: tuple[Any, ...], error: type[Exception], match: str
) -> None:
    tc = begun()
    refused(lambda: propose_requirement(tc, *args), tc, error, match)


def test_a_proposal_needs_a_task() -> None:
    tc = TasksContext()
    refused(
        lambda: propose_requirement(tc, "CONSTRAINT", "x", "s"),
        tc,
        TaskScopeError,
        "begin_task first",
    )


def test_at_most_64_requirements() -> None:
    tc = begun()
    for i in range(MAX_REQUIREMENTS):
        tc, _ = propose_requirement(tc, "CONSTRAINT", f"rule {i}", "s")
    refused(
        lambda: propose_requirement(tc, "CONSTRAINT", "one more", "s"),
        tc,
        TaskLimitExceeded,
        "64 requirements",
    )
    assert propose_requirement(tc, "CONSTRAINT", "rule 3", "s")[0] is tc  # a duplicate still dedups
    assert len({r.id for r in tc.requirements}) == MAX_REQUIREMENTS


# ------------------------------------------------------------------ decide


def test_decide_confirms_with_a_decision() -> None:
    tc, req = propose_requirement(begun(), "ACCEPTANCE_CRITERION", "x", "s")
    done = decide(tc, req.id, "CONFIRMED", USER, expected_revision=tc.revision, now=lambda: 9.0)
    [confirmed] = done.requirements
    assert confirmed.status == "CONFIRMED" and confirmed.decision == attrs.evolve(
        USER, decided_at=9.0
    )
    assert done.revision == tc.revision + 1
    assert decide(done, req.id, "CONFIRMED", USER, expected_revision=done.revision) is done


@pytest.mark.parametrize(
    ("rid", "status", "decision", "error", "match"),
    [
        ("R9", "CONFIRMED", USER, RequirementNotFound, r"no requirement 'R9' \(known: R1\)"),
        (
            "R1",
            "CANDIDATE",
            USER,
            InvalidDecision,
            "status 'CANDIDATE' is not CONFIRMED or REJECTED",
        ),
        ("R1", "CONFIRMED", Decision("MODEL", "x"), InvalidDecision, "authority 'MODEL'"),  # type: ignore[arg-type]
        (
            "R1",
            "CONFIRMED",
            Decision("USER", ""),
            InvalidDecision,
            "decision.source_ref must not be blank",
        ),
        ("R1", "CONFIRMED", "yes", InvalidDecision, "decision must be a Decision"),
    ],
)
def test_decide_refusals(
    rid: str, status: str, decision: Any, error: type[Exception], match: str
) -> None:
    tc, _ = propose_requirement(begun(), "ACCEPTANCE_CRITERION", "x", "s")
    refused(
        lambda: decide(tc, rid, status, decision, expected_revision=tc.revision), tc, error, match
    )


def test_a_requirement_no_longer_confirmed_loses_its_reports() -> None:
    tc = with_criterion()
    tc = record_verification(tc, report(tc), expected_revision=tc.revision)
    rejected = decide(
        tc, "R1", "REJECTED", Decision("CALLER", "scope cut"), expected_revision=tc.revision
    )
    assert rejected.verifications == ()


# ------------------------------------------------------------------ subject version


def test_subject_version_needs_a_task_and_is_a_no_op_when_unchanged() -> None:
    empty = TasksContext()
    refused(
        lambda: set_subject_version(empty, "v1", expected_revision=0),
        empty,
        TaskScopeError,
        "begin_task first",
    )
    refused(
        lambda: invalidate_subject(empty, expected_revision=0),
        empty,
        TaskScopeError,
        "begin_task first",
    )
    tc = set_subject_version(begun(), "v1", expected_revision=1)
    assert tc.subject_version == "v1" and tc.revision == 2
    assert set_subject_version(tc, "v1", expected_revision=2) is tc
    refused(
        lambda: set_subject_version(tc, "", expected_revision=2),
        tc,
        TaskArgumentError,
        "must not be blank",
    )
    refused(
        lambda: set_subject_version(tc, "v" * 201, expected_revision=2),
        tc,
        TaskLimitExceeded,
        "at most 200",
    )
    gone = invalidate_subject(tc, expected_revision=2)
    assert gone.subject_version is None and gone.revision == 3
    assert invalidate_subject(gone, expected_revision=3) is gone


# ------------------------------------------------------------------ verification


def test_a_verification_is_recorded_and_replaces_the_previous_one() -> None:
    tc = with_criterion()
    first = record_verification(
        tc, report(tc, outcome="FAILED"), expected_revision=tc.revision, now=lambda: 5.0
    )
    assert first.verifications[0].recorded_at == 5.0 and first.revision == tc.revision + 1
    second = record_verification(first, report(first, id="rep-2"), expected_revision=first.revision)
    assert [(v.id, v.outcome) for v in second.verifications] == [("rep-2", "PASSED")]


def test_a_binding_mismatch_is_refused() -> None:
    tc = with_criterion()
    for binding in (
        Binding("T-2", tc.contract_version, "v1"),
        Binding("T-1", tc.contract_version - 1, "v1"),
        Binding("T-1", tc.contract_version, "v0"),
    ):
        refused(
            lambda b=binding: record_verification(
                tc, report(tc, binding=b), expected_revision=tc.revision
            ),
            tc,
            BindingMismatch,
            "another task, contract or subject version",
        )


def test_evidence_recorded_before_a_subject_change_is_no_longer_current() -> None:
    tc = with_criterion()
    old = report(tc)
    moved = set_subject_version(tc, "v2", expected_revision=tc.revision)
    refused(
        lambda: record_verification(moved, old, expected_revision=moved.revision),
        moved,
        BindingMismatch,
        "current binding",
    )
    kept = record_verification(tc, old, expected_revision=tc.revision)
    kept = set_subject_version(kept, "v2", expected_revision=kept.revision)
    assert not kept.is_current(kept.verifications[0])


def test_no_evidence_without_a_subject_version() -> None:
    tc = with_criterion()
    tc = invalidate_subject(tc, expected_revision=tc.revision)
    refused(
        lambda: record_verification(tc, report(tc), expected_revision=tc.revision),
        tc,
        BindingMismatch,
        "no subject version",
    )


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        ("CANDIDATE", "ACCEPTANCE_CRITERION"),
        ("REJECTED", "ACCEPTANCE_CRITERION"),
        ("CONFIRMED", "CONSTRAINT"),
    ],
)
def test_only_a_confirmed_acceptance_criterion_is_verified(status: str, kind: str) -> None:
    tc = with_criterion(status, kind)
    refused(
        lambda: record_verification(tc, report(tc), expected_revision=tc.revision),
        tc,
        RequirementNotConfirmed,
        "only a CONFIRMED ACCEPTANCE_CRITERION",
    )


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"requirement_id": "R7"}, RequirementNotFound, "no requirement 'R7'"),
        ({"outcome": "GREEN"}, InvalidVerification, "outcome 'GREEN'"),
        ({"verifier_id": ""}, InvalidVerification, "report.verifier_id must not be blank"),
        ({"action_id": "a" * 201}, TaskLimitExceeded, "report.action_id: 201 characters"),
        ({"reason": "r" * 2001}, TaskLimitExceeded, "report.reason: 2001 characters"),
    ],
)
def test_a_bad_report_changes_nothing(
    changes: dict[str, Any], error: type[Exception], match: str
) -> None:
    tc = with_criterion()
    refused(
        lambda: record_verification(tc, report(tc, **changes), expected_revision=tc.revision),
        tc,
        error,
        match,
    )


def test_at_most_64_verifications_kept() -> None:
    """One report per requirement and 64 requirements bound it already; a section that came
    from elsewhere with 64 reports of other requirements still cannot grow past the limit."""
    tc = with_criterion()
    others = tuple(report(tc, f"X{i}", id=f"x{i}") for i in range(MAX_VERIFICATIONS))
    full = attrs.evolve(tc, verifications=others)
    refused(
        lambda: record_verification(full, report(full), expected_revision=full.revision),
        full,
        TaskLimitExceeded,
        "64 verification reports",
    )
    one_less = attrs.evolve(tc, verifications=others[1:])
    assert (
        len(record_verification(one_less, report(tc), expected_revision=tc.revision).verifications)
        == 64
    )


# ------------------------------------------------------------------ expected_revision


def mutators(tc: TasksContext) -> dict[str, Callable[[int], Any]]:
    return {
        "begin_task": lambda r: begin_task(tc, TaskScope("T-9", "other"), expected_revision=r),
        "propose": lambda r: propose_requirement(tc, "CONSTRAINT", "y", "s", expected_revision=r),
        "decide": lambda r: decide(tc, "R1", "REJECTED", USER, expected_revision=r),
        "set_subject_version": lambda r: set_subject_version(tc, "v9", expected_revision=r),
        "invalidate_subject": lambda r: invalidate_subject(tc, expected_revision=r),
        "record_verification": lambda r: record_verification(tc, report(tc), expected_revision=r),
    }


@pytest.mark.parametrize("name", sorted(mutators(TasksContext())))
def test_every_mutator_checks_expected_revision(name: str) -> None:
    tc = with_criterion()
    fn = mutators(tc)[name]
    for stale in (tc.revision - 1, tc.revision + 1):
        with pytest.raises(TaskRevisionConflict) as info:
            fn(stale)
        assert info.value.expected == stale and info.value.actual == tc.revision
    with pytest.raises(TaskArgumentError, match="expected_revision must be an int"):
        fn(str(tc.revision))
    assert fn(tc.revision) is not None


def test_a_no_op_still_checks_expected_revision() -> None:
    tc = begun()
    with pytest.raises(TaskRevisionConflict):
        begin_task(tc, SCOPE, expected_revision=0)
