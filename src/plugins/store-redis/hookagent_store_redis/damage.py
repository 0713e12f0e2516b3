"""How a damaged slot is reported: the scripts' damage answers and codec errors, each naming
the slot (user, session and key), and a typed error for each.

Why its own module: loads and saves raise the same errors for the same damage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hookagent.codec import decode_head, decode_msgs
from hookagent.errors import CorruptState, InvalidState, StateTooLarge, UnsupportedSchemaVersion
from hookagent.messages import Msg
from hookagent.state import AgentState, History

from .cache import CachedHistory

DAMAGE = {  # what the scripts name in a CORRUPT answer
    "head": "head (version, generation, count, incarnation, chain, write id or lineage ring "
    "not stored as such)",
    "sections": "head's encoded sections (empty, not a JSON object, a NUL byte, or no "
    "integer schema_version)",
    "slot": "head's encoded sections (they name another user_id or session_id)",
    "meta": "counters hash (a gate epoch, fence, incarnation or generation that is no int)",
    "keyset": "key set (wrong type)",
    "index": "per-user session index (wrong type)",
    "list": "message list (wrong type)",
    "rows": "message list (rows that do not match the head's hash chain)",
    "orphan": "head (missing, while the message list exists)",
}


def damaged(what: str, extra: Sequence[Any], where: str, written: bool) -> CorruptState:
    """The CorruptState for a script's damage answer, naming the slot."""
    end = "; nothing was written" if not written else ""
    if what == "count":
        return CorruptState(
            f"{where} is damaged: its head says {int(extra[0])} messages, the list holds "
            f"{int(extra[1])}{end}"
        )
    return CorruptState(f"the {DAMAGE.get(what, what)} of {where} is damaged{end}")


def decoded(
    where: str, sections: bytes, raw: Sequence[bytes], cached: CachedHistory | None, start: int
) -> tuple[list[Msg], AgentState]:
    """Decode a loaded slot (``start`` cached messages, then ``raw``); a codec error names
    the slot (and stays typed).

    The history shares the returned log (no copy of the cached messages) and is committed:
    it is exactly what the store holds, so the next save appends only what is new.
    """
    try:
        new = decode_msgs(raw) if raw else []
        state = decode_head(sections, ())
    except (UnsupportedSchemaVersion, StateTooLarge) as exc:
        raise type(exc)(f"{where}: {exc}") from exc
    except InvalidState as exc:
        raise CorruptState(f"{where} does not decode: {exc}") from exc
    log = cached.extended(start, new) if cached is not None else list(new)
    state.context = History.shared(log, start + len(new))
    return log, state
