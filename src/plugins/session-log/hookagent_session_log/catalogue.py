"""The event catalogue: what the recorder writes, what the projection must understand.

A *required* event changes the state a rebuild produces; recovery refuses a log holding a
required type it does not know (a newer writer's fact it would silently drop). An optional
event is kept and shown to operators, and ignored by the projection when unknown.
Applications add their own under their namespace (``acme/review_note``) with
``SessionLogAdmin.append``.
"""

from __future__ import annotations

import time
from typing import Any

from hookagent import Msg, ToolResultBlock
from hookagent.codec import msg_from_dict
from hookagent.sessionlog import CHECKPOINT, LogEvent

MESSAGE = "message/appended"
REPLACED = "context/replaced"
TOOL_DISPATCH = "tool/dispatch"
TOOL_RESULT = "tool/result"
TOOL_SUSPENDED = "tool/suspended"
RECOVERY = "recovery/applied"
RUN_STARTED = "run/started"
RUN_FINISHED = "run/finished"
MODEL_DISPATCH = "model/dispatch"
MODEL_END = "model/end"
ADMIN = "admin/updated"
IMPORTED = "import/baseline"
SEGMENT = "history/segment"
"""K messages' records in one event, named by a checkpoint's ``segments`` (docs/session-log.md):
optional, because every message it holds is also a ``message/appended`` fact, so a reader
that ignores it (an older one, or a load past a segment no checkpoint names) rebuilds the
same history from the facts."""

REQUIRED = frozenset(
    {MESSAGE, REPLACED, TOOL_DISPATCH, TOOL_RESULT, TOOL_SUSPENDED, RECOVERY, CHECKPOINT}
)
"""Types a rebuild depends on."""
OPTIONAL = frozenset(
    {
        RUN_STARTED,
        RUN_FINISHED,
        MODEL_DISPATCH,
        MODEL_END,
        ADMIN,
        IMPORTED,
        SEGMENT,
        "interaction/requested",
        "interaction/resolved",
        "compaction/applied",
        "task/changed",
        "plan/changed",
        "permission/changed",
        "section/changed",
        "verification/result",
        "subagent/started",
        "subagent/finished",
        "run/event",
    }
)
"""Types written for operators and sinks; a rebuild does not need them."""
SECTION_EVENTS = {
    "tasks_context": "task/changed",
    "permission_context": "permission/changed",
    "plan_mode_context": "plan/changed",
}
"""A section's change, named as the reference's catalogue names it."""


def event(
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    run_id: str | None = None,
    turn_id: str | None = None,
    required: bool | None = None,
) -> LogEvent:
    return LogEvent(
        kind,
        payload or {},
        kind in REQUIRED if required is None else required,
        run_id,
        turn_id,
        occurred_at=time.time(),
    )


def message_event(msg: Msg, run_id: str | None, turn_id: str | None) -> LogEvent:
    return event(MESSAGE, {"m": msg}, run_id=run_id, turn_id=turn_id)


def replaced_event(
    messages: list[Msg], reason: str, run_id: str | None, turn_id: str | None
) -> LogEvent:
    return event(REPLACED, {"ms": list(messages), "reason": reason}, run_id=run_id, turn_id=turn_id)


def result_event(result: ToolResultBlock, run_id: str | None, turn_id: str | None) -> LogEvent:
    msg = Msg("tool", [result], id="result")
    return event(TOOL_RESULT, {"id": result.id, "m": msg}, run_id=run_id, turn_id=turn_id)


def _msg(doc: Any, seq: int) -> Msg:
    return doc if type(doc) is Msg else msg_from_dict(doc, where=f"event {seq}")


def result_in(payload: Any, seq: int) -> ToolResultBlock:
    """The tool result a ``tool/result`` payload holds."""
    block = _msg(payload["m"], seq).content[0]
    if not isinstance(block, ToolResultBlock):
        raise TypeError("not a tool result")
    return block


def result_of(e: LogEvent) -> ToolResultBlock:
    return result_in(e.payload, e.seq)


def message_in(payload: Any, seq: int) -> Msg:
    """The message a ``message/appended`` payload holds."""
    return _msg(payload["m"], seq)


def message_of(e: LogEvent) -> Msg:
    return _msg(e.payload["m"], e.seq)


def messages_in(payload: Any, seq: int) -> list[Msg]:
    """The history a ``context/replaced`` payload holds."""
    return [_msg(d, seq) for d in payload["ms"]]


def messages_of(e: LogEvent) -> list[Msg]:
    return messages_in(e.payload, e.seq)


def known(kind: str) -> bool:
    return kind in REQUIRED or kind in OPTIONAL
