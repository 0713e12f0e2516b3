"""The ``tasks_context`` JSON: a strict reader that names the field, and the writer.

The reader is hand-written rather than cattrs because the projection may read the section on
every model request; it accepts the kernel's old minimal shape (``todos: [{content, status,
id}]``) and keeps keys it does not know, so a section written by a newer plugin or by the
reference survives a round trip through this one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from .errors import InvalidTasksSection
from .model import (
    AUTHORITIES,
    KINDS,
    OUTCOMES,
    SECTION,
    STATUSES,
    TASK_STATES,
    Binding,
    Decision,
    Requirement,
    Task,
    TasksContext,
    TaskScope,
    VerificationReport,
)
from .model import HEX32 as _HEX32

T = TypeVar("T")


# ------------------------------------------------------------------------------ reading


def _fail(path: str, message: str) -> InvalidTasksSection:
    return InvalidTasksSection(f"{SECTION}{path}: {message}")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _get(doc: Mapping[str, Any], key: str, types: type[T] | tuple[type, ...], path: str) -> T:
    if key not in doc:
        raise _fail(path, f"missing {key!r}")
    return _typed(doc[key], types, f"{path}.{key}")


def _opt(
    doc: Mapping[str, Any], key: str, types: type[T] | tuple[type, ...], path: str, default: Any
) -> T:
    value = doc.get(key)
    return cast(T, default) if value is None else _typed(value, types, f"{path}.{key}")


def _typed(value: Any, types: type[T] | tuple[type, ...], path: str) -> T:
    # bool is an int subclass: never accept it where a number is meant
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
        names = " or ".join(t.__name__ for t in _tuple(types))
        raise _fail(path, f"expected {names}, got {_kind(value)}")
    return cast(T, value)


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _choice(value: Any, choices: tuple[str, ...], path: str) -> Any:
    if value not in choices:
        raise _fail(path, f"{value!r} is not one of {', '.join(choices)}")
    return value


def _nonneg(value: int, path: str) -> int:
    if value < 0:
        raise _fail(path, f"must be >= 0, got {value}")
    return value


def _strs(value: Any, path: str) -> tuple[str, ...]:
    items = _typed(value, list, path)
    return tuple(_typed(v, str, f"{path}[{i}]") for i, v in enumerate(items))


def _object(value: Any, path: str) -> Mapping[str, Any]:
    return _typed(value, dict, path)


_TASK_KEYS = frozenset(
    {"id", "subject", "description", "state", "created_at", "owner", "blocks", "blocked_by"}
    | {"metadata"}
)
_TOP_KEYS = frozenset(
    {"tasks", "revision", "objective", "task_scope", "contract_version", "subject_version"}
    | {"requirements", "verifications"}
)


def _fast_task(doc: Any) -> Task | None:
    """The common case without the per-field checks' calls (None: check field by field)."""
    if type(doc) is not dict:
        return None
    get = doc.get
    task_id, subject, state = get("id"), get("subject"), get("state", "pending")
    description, created, owner = get("description") or "", get("created_at"), get("owner")
    blocks, blocked_by, metadata = get("blocks") or [], get("blocked_by") or [], get("metadata")
    if not (
        type(task_id) is str
        and _HEX32.match(task_id)
        and type(subject) is str
        and state in TASK_STATES
        and type(description) is str
        and (created is None or type(created) in (str, float, int))
        and (owner is None or type(owner) is str)
        and type(blocks) is list
        and type(blocked_by) is list
        and all(type(b) is str for b in blocks)
        and all(type(b) is str for b in blocked_by)
        and (metadata is None or type(metadata) is dict)
        and doc.keys() <= _TASK_KEYS
    ):
        return None
    return Task(
        task_id,
        subject,
        state,
        description,
        created,
        owner,
        tuple(blocks),
        tuple(blocked_by),
        dict(metadata or {}),
        {},
    )


def _task(doc: Any, path: str) -> Task:
    fast = _fast_task(doc)
    if fast is not None:
        return fast
    doc = _object(doc, path)
    task_id = _get(doc, "id", str, path)
    if not _HEX32.match(task_id):
        raise _fail(f"{path}.id", f"{task_id!r} is not 32 lowercase hex digits")
    return Task(
        id=task_id,
        subject=_get(doc, "subject", str, path),
        state=_choice(doc.get("state", "pending"), TASK_STATES, f"{path}.state"),
        description=_opt(doc, "description", str, path, ""),
        created_at=_opt(doc, "created_at", (int, float, str), path, None),
        owner=_opt(doc, "owner", str, path, None),
        blocks=_strs(doc.get("blocks") or [], f"{path}.blocks"),
        blocked_by=_strs(doc.get("blocked_by") or [], f"{path}.blocked_by"),
        metadata=dict(_opt(doc, "metadata", dict, path, {})),
        extra={k: v for k, v in doc.items() if k not in _TASK_KEYS},
    )


def legacy_task_id(index: int, content: str) -> str:
    """A stable id for a todo of the old shape that had none (upcasting stays pure)."""
    return hashlib.sha256(f"legacy-todo\0{index}\0{content}".encode()).hexdigest()[:32]


def _legacy_todo(doc: Any, index: int, path: str) -> Task:
    doc = _object(doc, path)
    content = _get(doc, "content", str, path)
    old_id = doc.get("id")
    metadata: dict[str, Any] = {}
    if isinstance(old_id, str) and _HEX32.match(old_id):
        task_id = old_id
    else:
        task_id = legacy_task_id(index, content)
        if old_id is not None:
            metadata["legacy_id"] = old_id
    return Task(
        id=task_id,
        subject=content,
        state=_choice(doc.get("status", "pending"), TASK_STATES, f"{path}.status"),
        metadata=metadata,
    )


def _decision(doc: Any, path: str) -> Decision:
    doc = _object(doc, path)
    return Decision(
        authority=_choice(doc.get("authority"), AUTHORITIES, f"{path}.authority"),
        source_ref=_get(doc, "source_ref", str, path),
        decided_at=_opt(doc, "decided_at", (int, float), path, None),
    )


def _requirement(doc: Any, path: str) -> Requirement:
    doc = _object(doc, path)
    status = _choice(doc.get("status", "CANDIDATE"), STATUSES, f"{path}.status")
    decision = (
        None if doc.get("decision") is None else _decision(doc["decision"], f"{path}.decision")
    )
    if (decision is None) != (status == "CANDIDATE"):
        raise _fail(
            f"{path}.decision",
            f"a {status} requirement must {'not ' if decision else ''}have a decision",
        )
    return Requirement(
        id=_get(doc, "id", str, path),
        kind=_choice(doc.get("kind"), KINDS, f"{path}.kind"),
        text=_get(doc, "text", str, path),
        status=status,
        source_ref=_opt(doc, "source_ref", str, path, ""),
        decision=decision,
        created_at=_opt(doc, "created_at", (int, float), path, None),
    )


def _binding(doc: Any, path: str) -> Binding:
    doc = _object(doc, path)
    return Binding(
        task_id=_get(doc, "task_id", str, path),
        contract_version=_nonneg(
            _get(doc, "contract_version", int, path), f"{path}.contract_version"
        ),
        subject_version=_opt(doc, "subject_version", str, path, None),
    )


def _report(doc: Any, path: str) -> VerificationReport:
    doc = _object(doc, path)
    return VerificationReport(
        id=_get(doc, "id", str, path),
        requirement_id=_get(doc, "requirement_id", str, path),
        action_id=_get(doc, "action_id", str, path),
        verifier_id=_get(doc, "verifier_id", str, path),
        outcome=_choice(doc.get("outcome"), OUTCOMES, f"{path}.outcome"),
        reason=_opt(doc, "reason", str, path, ""),
        binding=_binding(doc.get("binding"), f"{path}.binding"),
        recorded_at=_opt(doc, "recorded_at", (int, float), path, None),
    )


def _scope(doc: Any, path: str) -> TaskScope:
    doc = _object(doc, path)
    return TaskScope(
        task_id=_get(doc, "task_id", str, path),
        objective=_get(doc, "objective", str, path),
        source_ref=_opt(doc, "source_ref", str, path, ""),
    )


def parse_section(raw: Any) -> TasksContext:
    """The section from its stored JSON (None: empty); ``InvalidTasksSection`` names the field.

    The kernel's old minimal shape (``todos``, ``revision``, ``objective``) is upcast.
    """
    if raw is None:
        return TasksContext()
    doc = _object(raw, "")
    if "tasks" not in doc and "todos" in doc:
        todos = _typed(doc["todos"], list, ".todos")
        tasks = tuple(_legacy_todo(t, i, f".todos[{i}]") for i, t in enumerate(todos))
        extra = {k: v for k, v in doc.items() if k not in _TOP_KEYS and k != "todos"}
    else:
        items = _typed(doc.get("tasks") or [], list, ".tasks")
        tasks = tuple(_task(t, f".tasks[{i}]") for i, t in enumerate(items))
        extra = {k: v for k, v in doc.items() if k not in _TOP_KEYS}
    requirements = _typed(doc.get("requirements") or [], list, ".requirements")
    verifications = _typed(doc.get("verifications") or [], list, ".verifications")
    return TasksContext(
        tasks=tasks,
        revision=_nonneg(_opt(doc, "revision", int, "", 0), ".revision"),
        objective=_opt(doc, "objective", str, "", None),
        scope=None if doc.get("task_scope") is None else _scope(doc["task_scope"], ".task_scope"),
        contract_version=_nonneg(_opt(doc, "contract_version", int, "", 0), ".contract_version"),
        subject_version=_opt(doc, "subject_version", str, "", None),
        requirements=tuple(
            _requirement(r, f".requirements[{i}]") for i, r in enumerate(requirements)
        ),
        verifications=tuple(
            _report(v, f".verifications[{i}]") for i, v in enumerate(verifications)
        ),
        extra=extra,
    )


# ------------------------------------------------------------------------------ writing


def task_json(task: Task) -> dict[str, Any]:
    return {
        **task.extra,
        "id": task.id,
        "subject": task.subject,
        "description": task.description,
        "state": task.state,
        "created_at": task.created_at,
        "owner": task.owner,
        "blocks": list(task.blocks),
        "blocked_by": list(task.blocked_by),
        "metadata": dict(task.metadata),
    }


def binding_json(binding: Binding) -> dict[str, Any]:
    return {
        "task_id": binding.task_id,
        "contract_version": binding.contract_version,
        "subject_version": binding.subject_version,
    }


def requirement_json(req: Requirement) -> dict[str, Any]:
    decision = req.decision
    return {
        "id": req.id,
        "kind": req.kind,
        "text": req.text,
        "status": req.status,
        "source_ref": req.source_ref,
        "decision": None
        if decision is None
        else {
            "authority": decision.authority,
            "source_ref": decision.source_ref,
            "decided_at": decision.decided_at,
        },
        "created_at": req.created_at,
    }


def report_json(report: VerificationReport) -> dict[str, Any]:
    return {
        "id": report.id,
        "requirement_id": report.requirement_id,
        "action_id": report.action_id,
        "verifier_id": report.verifier_id,
        "outcome": report.outcome,
        "reason": report.reason,
        "binding": binding_json(report.binding),
        "recorded_at": report.recorded_at,
    }


def section_json(tc: TasksContext) -> dict[str, Any]:
    """The section as the JSON the state stores (and ``parse_section`` reads back)."""
    scope = tc.scope
    return {
        **tc.extra,
        "tasks": [task_json(t) for t in tc.tasks],
        "revision": tc.revision,
        "objective": tc.objective,
        "task_scope": None
        if scope is None
        else {
            "task_id": scope.task_id,
            "objective": scope.objective,
            "source_ref": scope.source_ref,
        },
        "contract_version": tc.contract_version,
        "subject_version": tc.subject_version,
        "requirements": [requirement_json(r) for r in tc.requirements],
        "verifications": [report_json(v) for v in tc.verifications],
    }
