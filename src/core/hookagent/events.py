"""Run events: one start, one end, and the steps between, all carrying the run's identity.

The end event (``run_finished``, ``run_suspended``, ``run_interrupted`` or ``run_failed``)
has ``data["outcome"]``: the run's ``GenerateReason``.
"""

from __future__ import annotations

import time
from typing import Any, Literal, TypeAlias

import attrs

EventKind: TypeAlias = Literal[
    "run_started",
    "state_loaded",
    "model_requested",
    "model_delta",
    "model_responded",
    "tool_called",
    "tool_returned",
    "tool_failed",
    "tool_denied",
    "tool_suspended",
    "interaction_resolved",
    "state_persisted",
    "run_finished",
    "run_suspended",
    "run_failed",
    "run_interrupted",
]

END_KINDS = frozenset({"run_finished", "run_suspended", "run_failed", "run_interrupted"})
KERNEL_KINDS = frozenset(EventKind.__args__)  # type: ignore[attr-defined]
"""The kinds only the kernel emits; plugins emit their own (``hookagent.emit_event``)."""


@attrs.frozen
class RunEvent:
    """What happened, to which run and turn. ``seq`` orders the events of one execution
    from 0."""

    kind: EventKind | str  # a plugin's own kinds too (``task_changed``, ...)
    agent_id: str
    user_id: str
    session_id: str
    run_id: str
    seq: int
    data: dict[str, Any] = attrs.Factory(dict)
    timestamp: float = attrs.Factory(time.time)
    turn_id: str | None = None

    @property
    def is_end(self) -> bool:
        return self.kind in END_KINDS
