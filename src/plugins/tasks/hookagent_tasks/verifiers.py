"""Verifiers: application code that runs a check and records it as evidence.

A verifier is any object with a ``verifier_id`` and ``async verify(requirement, binding) ->
Check``. ``run_verification`` reads the binding *before* the check runs and records the
report against that binding, so evidence about a subject version that changed while the check
ran is refused (``BindingMismatch``) instead of being filed under the new version. A verifier
that raises records an ERROR outcome with the exception as the reason.

PASSED says that one check passed for one requirement at one subject version; it is not a
verdict on overall completion.
"""

from __future__ import annotations

import inspect
import shlex
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio
import attrs
from hookagent.messages import new_id

from . import contract
from .admin import TaskAdmin, Who
from .errors import BindingMismatch, TaskRevisionConflict
from .guard import trusted
from .model import MAX_REASON, Binding, Outcome, Requirement, VerificationReport


@attrs.frozen
class Check:
    """What a verifier found."""

    outcome: Outcome
    reason: str = ""


@runtime_checkable
class Verifier(Protocol):
    """Runs one check of a requirement against the subject version named by ``binding``."""

    @property
    def verifier_id(self) -> str: ...

    async def verify(self, requirement: Requirement, binding: Binding) -> Check: ...


@attrs.frozen
class FunctionVerifier:
    """A verifier from a function ``(requirement, binding) -> Check | bool`` (sync or async)."""

    verifier_id: str
    func: Callable[[Requirement, Binding], Check | bool | Awaitable[Check | bool]]

    async def verify(self, requirement: Requirement, binding: Binding) -> Check:
        value = self.func(requirement, binding)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, bool):
            return Check("PASSED" if value else "FAILED")
        return value


@attrs.frozen
class CommandVerifier:
    """Runs a command; exit status 0 is PASSED, any other FAILED (the output's tail is the
    reason). ``{subject_version}`` and ``{requirement_id}`` in the arguments are filled in."""

    verifier_id: str
    command: Sequence[str]
    cwd: str | None = None
    timeout: float = 600.0

    @classmethod
    def from_string(cls, verifier_id: str, command: str, **kw: Any) -> CommandVerifier:
        return cls(verifier_id, tuple(shlex.split(command)), **kw)

    async def verify(self, requirement: Requirement, binding: Binding) -> Check:
        fill = {"subject_version": binding.subject_version or "", "requirement_id": requirement.id}
        argv = [part.format(**fill) for part in self.command]
        with anyio.fail_after(self.timeout):
            done = await anyio.run_process(argv, cwd=self.cwd, check=False)
        output = (done.stdout + done.stderr).decode(errors="replace").strip()
        tail = output[-(MAX_REASON - 40) :]
        if done.returncode == 0:
            return Check("PASSED", tail or "exit status 0")
        return Check("FAILED", f"exit status {done.returncode}: {tail}".strip())


@trusted
async def run_verification(
    admin: TaskAdmin,
    who: Who,
    verifier: Verifier,
    requirement_id: str,
    *,
    action_id: str | None = None,
    session_id: str | None = None,
    expected_revision: int | None = None,
    retries: int = 3,
) -> VerificationReport:
    """Run ``verifier`` on a requirement and record the report with the binding it checked.

    The requirement must be a CONFIRMED acceptance criterion and a subject version must be
    set: that is checked before the check runs, and again when the report is recorded. If
    the section moved meanwhile (a todo update, say) the report is still recorded as long
    as the binding is the one checked; otherwise ``BindingMismatch``. ``expected_revision``
    (optional) is checked before the check runs.
    """
    tc = await admin.get(who, session_id=session_id)
    if expected_revision is not None:
        contract.check_revision(tc, expected_revision)
    binding = tc.binding
    requirement = tc.requirement(requirement_id)
    probe = VerificationReport(
        id=new_id(),
        requirement_id=requirement_id,
        action_id=action_id or new_id(),
        verifier_id=verifier.verifier_id,
        outcome="UNKNOWN",
        reason="",
        binding=binding,  # type: ignore[arg-type]  # None is refused by the probe below
        recorded_at=None,
    )
    contract.record_verification(tc, probe, expected_revision=tc.revision)  # refuse early
    assert requirement is not None and binding is not None  # the probe checked both
    try:
        check = await verifier.verify(requirement, binding)
    except Exception as exc:  # a broken check is evidence of nothing: recorded as ERROR
        check = Check("ERROR", f"{type(exc).__name__}: {exc}")
    report = attrs.evolve(
        probe, outcome=check.outcome, reason=check.reason[:MAX_REASON], recorded_at=time.time()
    )
    revision = tc.revision
    for attempt in range(retries + 1):
        try:
            await admin.record_verification(
                who, report, expected_revision=revision, session_id=session_id
            )
            return report
        except TaskRevisionConflict as conflict:
            if attempt == retries:
                raise
            now = await admin.get(who, session_id=session_id)
            if now.binding != binding:
                raise BindingMismatch(
                    f"the binding moved from {binding!r} to {now.binding!r} while "
                    f"{verifier.verifier_id!r} ran: the report is not recorded"
                ) from conflict
            revision = now.revision
    raise AssertionError("unreachable")  # pragma: no cover


@trusted
def run_verification_sync(
    admin: TaskAdmin, who: Who, verifier: Verifier, requirement_id: str, **kw: Any
) -> VerificationReport:
    return admin.run_sync(run_verification, admin, who, verifier, requirement_id, **kw)  # type: ignore[no-any-return]
