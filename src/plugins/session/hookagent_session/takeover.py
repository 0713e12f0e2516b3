"""Taking over a claim whose replica lost the session (it died, or its owner lease lapsed).

The new owner never guesses from the inbox alone; the session log says what the claimed
run did. First the run_id is sealed (a paused replica that wakes up can neither take the
session log's lease with it nor commit under it), then:

* the run finished (``run/finished`` with that run_id): the command gets that outcome;
* the run took its input (``run/started``, no ``run/finished``): ``interrupted``. The
  input is not re-sent: the model may have acted on it (``resume`` continues it on
  purpose); a tool dispatched without an outcome makes the session's next run fail with
  ``UncertainToolCalls`` until it is reconciled (the session log's rule);
* nothing of it is in the log: it never ran; it is claimed again as the next attempt.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from hookagent.sessionlog import SessionLog

from .fold import Entry

PAGE = 1000
LOST = "the replica running it was lost before it finished (its lease expired)"
_OUTCOMES = {
    "success": "completed",
    "suspended": "suspended",
    "interrupted": "interrupted",
    "shutdown": "interrupted",
    "error": "failed",
}


async def take_over(
    log: SessionLog, user_id: str, session_id: str, e: Entry
) -> dict[str, Any] | Literal["rerun"] | None:
    """None while the claim's run is live; ``"rerun"``; or the final status's fields."""
    run_id = e.run_id
    if run_id is None:
        return "rerun"
    head = await log.head(user_id, session_id)
    if head.owner == run_id and head.lease_until > time.time():
        return None  # its run holds the session log: it is alive somewhere
    await log.seal(user_id, session_id, run_id)
    found = await outcome_of_run(log, user_id, session_id, e)
    if found is not None:
        return found
    if await _started(log, user_id, session_id, e):
        return {"status": "interrupted", "error": LOST, "error_type": "ReplicaLost"}
    return "rerun"


async def outcome_of_run(
    log: SessionLog, user_id: str, session_id: str, e: Entry
) -> dict[str, Any] | None:
    """The final status fields ``run/finished`` of the claim's run says, if it finished."""
    async for ev in _run_events(log, user_id, session_id, e):
        if ev.type == "run/finished":
            outcome = str(ev.payload.get("outcome", "success"))
            return {
                "status": _OUTCOMES.get(outcome, "failed"),
                "turn_id": ev.turn_id,
            }
    return None


async def _started(log: SessionLog, user_id: str, session_id: str, e: Entry) -> bool:
    async for ev in _run_events(log, user_id, session_id, e):
        if ev.type == "run/started":
            return True
    return False


async def _run_events(log: SessionLog, user_id: str, session_id: str, e: Entry) -> Any:
    seq = max(0, e.log_seq)
    while True:
        page = await log.read_after(user_id, session_id, seq, PAGE)
        for ev in page:
            if ev.run_id == e.run_id:
                yield ev
        if len(page) < PAGE:
            return
        seq = page[-1].seq
