"""Verifiers: a check recorded with the binding it ran against; evidence about a subject
version that moved while the check ran is refused; a broken check is an ERROR."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from hookagent import AgentConfig
from hookagent_tasks import (
    Binding,
    BindingMismatch,
    Check,
    CommandVerifier,
    Decision,
    FunctionVerifier,
    Requirement,
    RequirementNotConfirmed,
    TaskAdmin,
    TaskRevisionConflict,
    TaskScope,
    Verifier,
    run_verification,
    run_verification_sync,
)

S = {"session_id": "s1"}


async def ready(admin: TaskAdmin, kind: str = "ACCEPTANCE_CRITERION", confirm: bool = True) -> int:
    """A task with R1 (confirmed unless told otherwise) and subject version v1; the revision."""
    await admin.begin_task("ann", TaskScope("T-1", "ship"), expected_revision=0, **S)
    req = await admin.propose("ann", kind, "tests pass", "chat", expected_revision=1, **S)
    revision = 2
    if confirm:
        await admin.decide(
            "ann", req.id, "CONFIRMED", Decision("USER", "chat"), expected_revision=2, **S
        )
        revision = 3
    await admin.set_subject_version("ann", "v1", expected_revision=revision, **S)
    return revision + 1


@pytest.mark.anyio
async def test_a_check_is_recorded_with_the_binding_it_ran_against(
    make_config: Callable[..., AgentConfig],
) -> None:
    admin = TaskAdmin(make_config().build())
    await ready(admin)
    seen: list[tuple[Requirement, Binding]] = []

    def check(req: Requirement, binding: Binding) -> bool:
        seen.append((req, binding))
        return True

    verifier = FunctionVerifier("unit-tests", check)
    assert isinstance(verifier, Verifier)
    report = await run_verification(admin, "ann", verifier, "R1", action_id="run-1", **S)
    assert seen[0][0].id == "R1" and seen[0][1] == Binding("T-1", 1, "v1")
    assert (report.outcome, report.verifier_id, report.action_id, report.binding) == (
        "PASSED",
        "unit-tests",
        "run-1",
        Binding("T-1", 1, "v1"),
    )
    tc = await admin.get("ann", **S)
    assert tc.verifications == (report,) and tc.is_current(report)

    async def failing(req: Requirement, binding: Binding) -> Check:
        return Check("FAILED", "2 tests failed")

    again = await run_verification(admin, "ann", FunctionVerifier("unit-tests", failing), "R1", **S)
    tc = await admin.get("ann", **S)
    assert (
        tc.verifications == (again,)
        and again.outcome == "FAILED"
        and again.reason == "2 tests failed"
    )


@pytest.mark.anyio
async def test_a_subject_change_while_the_check_runs_refuses_the_evidence(
    make_config: Callable[..., AgentConfig],
) -> None:
    admin = TaskAdmin(make_config().build())
    revision = await ready(admin)

    async def moves_the_subject(req: Requirement, binding: Binding) -> bool:
        await admin.set_subject_version("ann", "v2", expected_revision=revision, **S)
        return True

    with pytest.raises(BindingMismatch, match="the binding moved"):
        await run_verification(admin, "ann", FunctionVerifier("slow", moves_the_subject), "R1", **S)
    tc = await admin.get("ann", **S)
    assert tc.verifications == () and tc.subject_version == "v2"


@pytest.mark.anyio
async def test_an_unrelated_change_while_the_check_runs_does_not_lose_the_evidence(
    make_config: Callable[..., AgentConfig],
) -> None:
    admin = TaskAdmin(make_config().build())
    revision = await ready(admin)

    async def todo_meanwhile(req: Requirement, binding: Binding) -> bool:
        await admin.write_todos(
            "ann", [{"content": "x", "status": "pending"}], expected_revision=revision, **S
        )
        return True

    report = await run_verification(admin, "ann", FunctionVerifier("v", todo_meanwhile), "R1", **S)
    tc = await admin.get("ann", **S)
    assert tc.verifications == (report,) and tc.revision == revision + 2


@pytest.mark.anyio
async def test_a_broken_check_is_recorded_as_error(make_config: Callable[..., AgentConfig]) -> None:
    admin = TaskAdmin(make_config().build())
    await ready(admin)

    def broken(req: Requirement, binding: Binding) -> bool:
        raise RuntimeError("the CI is down")

    report = await run_verification(admin, "ann", FunctionVerifier("ci", broken), "R1", **S)
    assert report.outcome == "ERROR" and report.reason == "RuntimeError: the CI is down"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "confirm"), [("ACCEPTANCE_CRITERION", False), ("CONSTRAINT", True)]
)
async def test_the_check_does_not_run_for_a_requirement_that_cannot_be_verified(
    kind: str, confirm: bool, make_config: Callable[..., AgentConfig]
) -> None:
    admin = TaskAdmin(make_config().build())
    revision = await ready(admin, kind, confirm)
    ran: list[Any] = []
    with pytest.raises(RequirementNotConfirmed):
        await run_verification(
            admin, "ann", FunctionVerifier("v", lambda r, b: ran.append(r) or True), "R1", **S
        )
    with pytest.raises(TaskRevisionConflict):
        await run_verification(
            admin,
            "ann",
            FunctionVerifier("v", lambda r, b: ran.append(r) or True),
            "R1",
            expected_revision=revision - 1,
            **S,
        )
    assert ran == [] and (await admin.get("ann", **S)).verifications == ()


@pytest.mark.anyio
async def test_a_command_verifier(make_config: Callable[..., AgentConfig], tmp_path: Any) -> None:
    admin = TaskAdmin(make_config().build())
    await ready(admin)
    script = "import sys; print('checked', sys.argv[1], sys.argv[2]); sys.exit(int(sys.argv[3]))"
    ok = CommandVerifier(
        "cmd", (sys.executable, "-c", script, "{requirement_id}", "{subject_version}", "0")
    )
    report = await run_verification(admin, "ann", ok, "R1", **S)
    assert report.outcome == "PASSED" and report.reason == "checked R1 v1"
    bad = CommandVerifier.from_string("cmd", f'{sys.executable} -c "{script}" R1 v1 3')
    report = await run_verification(admin, "ann", bad, "R1", **S)
    assert report.outcome == "FAILED" and report.reason == "exit status 3: checked R1 v1"


def test_the_sync_twin(make_config: Callable[..., AgentConfig]) -> None:
    config = make_config()
    admin = TaskAdmin(config.build())
    admin.begin_task_sync("ann", TaskScope("T-1", "ship"), expected_revision=0, **S)
    admin.propose_sync("ann", "ACCEPTANCE_CRITERION", "x", "s", expected_revision=1, **S)
    admin.decide_sync("ann", "R1", "CONFIRMED", Decision("USER", "ok"), expected_revision=2, **S)
    admin.set_subject_version_sync("ann", "v1", expected_revision=3, **S)
    report = run_verification_sync(
        admin, "ann", FunctionVerifier("v", lambda r, b: True), "R1", **S
    )
    assert admin.get_sync("ann", **S).verifications == (report,)
    config.close()
