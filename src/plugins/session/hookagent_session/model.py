"""Commands and task views: what the inbox holds and what a caller sees of it.

A command's id is derived from (user_id, session_id, idempotency_key), so a resent request
finds its command again, and the run_id of its run from the command id (and the attempt),
so a command's run is sealed in the session log once it finished and can never run twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs
import orjson
from hookagent import Approve, ExternalResult, Msg, Reject, TextBlock
from hookagent.codec import message_doc, msg_from_dict, msg_to_dict
from hookagent.store.ids import check_id
from hookagent.turns import Answer

from .errors import InvalidCommand

TaskStatus: TypeAlias = Literal[
    "queued", "starting", "running", "completed", "suspended", "interrupted", "failed", "rejected"
]
"""``queued`` (in the inbox), ``starting`` (claimed by a dispatcher, being admitted),
``running`` (the run holds the session log's writer lease), then one final status."""
FINAL: frozenset[str] = frozenset({"completed", "suspended", "interrupted", "failed", "rejected"})
"""Statuses a command never leaves (the first one recorded wins)."""
STATUSES: frozenset[str] = frozenset({"queued", "starting", "running"}) | FINAL
CommandKind: TypeAlias = Literal["submit", "resume", "respond", "steer", "interrupt"]
KINDS: frozenset[str] = frozenset({"submit", "resume", "respond", "steer", "interrupt"})
QUEUED_KINDS: frozenset[str] = frozenset({"submit", "resume", "respond"})
"""Kinds that run in inbox order, one at a time; ``steer`` and ``interrupt`` act on the
running run at once."""
MsgInput: TypeAlias = str | Msg | Sequence[Msg | str]


@attrs.frozen
class TaskView:
    """One command as the inbox says now (a detached value; re-read it to follow it)."""

    command_id: str
    kind: CommandKind
    status: TaskStatus
    idempotency_key: str
    seq: int
    """The command's position in the session's inbox (commands run in this order)."""
    submitted_at: float
    turn_id: str | None = None
    run_id: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float | None = None
    error: str | None = None
    """Why it failed or was rejected (the error's message)."""
    error_type: str | None = None
    """The error's class name (``UncertainToolCalls``, ``NotRunning``, ...)."""
    reply_text: str | None = None
    """The reply's text (completed, suspended and interrupted runs)."""
    generate_reason: str | None = None
    """The reply's ``generate_reason`` (``COMPLETED``, ``MAX_ITERATIONS``, ...)."""
    replica_id: str | None = None
    """The dispatcher that claimed it last."""
    target_run_id: str | None = None
    """``steer`` / ``interrupt``: the run it acted on."""

    @property
    def done(self) -> bool:
        """True once the status is final."""
        return self.status in FINAL

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what a front end shows)."""
        return attrs.asdict(self)


# --------------------------------------------------------------------------- ids


def _encode_part(value: str) -> bytes:
    raw = value.encode("utf-8")
    return len(raw).to_bytes(4, "big") + raw


def command_id_for(user_id: str, session_id: str, idempotency_key: str) -> str:
    """``cmd-`` + 32 hex of SHA-256 over the length-prefixed triple: distinct triples give
    distinct ids (a collision would need SHA-256 broken; the inbox also checks the stored key)."""
    h = hashlib.sha256(b"hookagent-session/1\x00")
    for part in (user_id, session_id, idempotency_key):
        h.update(_encode_part(part))
    return "cmd-" + h.hexdigest()[:32]


def run_id_for(command_id: str, attempt: int) -> str:
    """The run_id of a command's ``attempt`` (1 unless a dead dispatcher's claim was taken
    over before its run took any input)."""
    return f"{command_id}.{attempt}"


def check_key(key: object) -> str:
    try:
        return check_id(key, "idempotency_key")
    except ValueError as exc:
        raise InvalidCommand(str(exc)) from None


# --------------------------------------------------------------------------- payloads


def encode_input(msgs: MsgInput) -> list[Msg]:
    """A submit's or steer's input as messages (a str is one user message)."""
    if isinstance(msgs, (str, Msg)):
        msgs = [msgs]
    if not isinstance(msgs, Sequence) or isinstance(msgs, (bytes, bytearray)):
        raise InvalidCommand(
            f"input is a str, a Msg or a sequence of them, got {type(msgs).__name__}"
        )
    out = [Msg.user(m) if isinstance(m, str) else m for m in msgs]
    if not out or any(not isinstance(m, Msg) for m in out):
        raise InvalidCommand("input is one or more messages (str or Msg)")
    if all(_blank(m) for m in out):
        raise InvalidCommand("input holds no content (empty text)")
    return out


def _blank(m: Msg) -> bool:
    return all(isinstance(b, TextBlock) and not b.text.strip() for b in m.content)


def input_docs(msgs: MsgInput) -> list[dict[str, Any]]:
    """The input as the codec's message documents (what the inbox stores)."""
    return [message_doc(m) for m in encode_input(msgs)]


def decode_input(docs: Any) -> list[Msg]:
    if not isinstance(docs, list):
        raise InvalidCommand("a stored input is a list of messages")
    return [m if isinstance(m, Msg) else msg_from_dict(m, where="inbox input") for m in docs]


def encode_answer(request_id: str, answer: Answer | Mapping[str, Any]) -> dict[str, Any]:
    """An answer as JSON: ``{"kind": "approve"|"reject"|"external_result", ...}``.

    ``answer`` is an ``Approve``/``Reject``/``ExternalResult`` (its tool_use_id must be
    ``request_id``) or that JSON form without the id (what an HTTP client sends).
    """
    check_id(request_id, "request_id")
    if isinstance(answer, Mapping):
        answer = decode_answer({**answer, "tool_use_id": request_id})
    if isinstance(answer, Approve):
        doc: dict[str, Any] = {"kind": "approve", "remember": answer.remember}
    elif isinstance(answer, Reject):
        doc = {"kind": "reject", "reason": str(answer.reason)}
    elif isinstance(answer, ExternalResult):
        if not isinstance(answer.output, str):
            raise InvalidCommand("an ExternalResult sent through a session carries text output")
        doc = {"kind": "external_result", "output": answer.output, "state": answer.state}
    else:
        raise InvalidCommand(
            f"an answer is Approve, Reject or ExternalResult, got {type(answer).__name__}"
        )
    if answer.tool_use_id != request_id:
        raise InvalidCommand(
            f"the answer is for {answer.tool_use_id!r}, not the request {request_id!r}"
        )
    return {"tool_use_id": request_id, **doc}


def decode_answer(doc: Mapping[str, Any]) -> Answer:
    """The kernel's answer for the JSON form (``InvalidCommand`` when it is not one)."""
    kind, tid = doc.get("kind"), doc.get("tool_use_id")
    if not isinstance(tid, str) or not tid:
        raise InvalidCommand("an answer names its request (tool_use_id)")
    try:
        if kind == "approve":
            return Approve(tid, remember=bool(doc.get("remember", False)))
        if kind == "reject":
            return Reject(tid, str(doc.get("reason", "rejected by the user")))
        if kind == "external_result":
            state = doc.get("state", "success")
            output = doc.get("output", "")
            if state not in ("success", "error") or not isinstance(output, str):
                raise InvalidCommand("external_result: output is text, state success or error")
            return ExternalResult(tid, output, state)
    except (TypeError, ValueError) as exc:
        raise InvalidCommand(f"answer {doc!r}: {exc}") from None
    raise InvalidCommand(f"an answer's kind is approve, reject or external_result, got {kind!r}")


def digest(kind: str, payload: Mapping[str, Any]) -> str:
    """What the idempotency rule compares: the kind and the payload, with the messages'
    generated ids and timestamps left out (a resent text is the same command)."""
    doc = {"kind": kind, **payload}
    if doc.get("input"):
        doc["input"] = [_content_of(m) for m in doc["input"]]
    data = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:40]


def _content_of(m: Any) -> Any:
    d = msg_to_dict(m) if isinstance(m, Msg) else dict(m)
    d.pop("id", None)
    d.pop("timestamp", None)
    return d
