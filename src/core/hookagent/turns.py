"""Turns: outcomes, suspension and the answers that continue a suspended turn.

A *turn* is one user request and every run it takes. A tool middleware (or a tool) that
cannot go on without a person or an outside system returns a ``PendingInteraction`` (see
``ask`` and ``await_external``) instead of a result; the run then ends ``SUSPENDED`` and
the next call on the session carries answers keyed by tool_use id.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from .errors import AnswerError, DuplicateAnswer, ToolSuspended, UnknownInteraction
from .messages import DataBlock, ImageBlock, OutputBlock, TextBlock, ToolResultBlock
from .state import PendingInteraction, TurnContext

__all__ = [
    "Answer",
    "Approve",
    "ExternalResult",
    "GenerateReason",
    "Reject",
    "SuspendKind",
    "ToolSuspended",
    "ask",
    "await_external",
    "match_answers",
]

GENERATE_REASON = "generate_reason"
"""The reply's metadata key that holds its ``GenerateReason``."""
SUSPEND_KIND = "suspend_kind"
"""The reply's metadata key that holds its ``SuspendKind`` when it is suspended."""


class GenerateReason(enum.StrEnum):
    """How a run ended; the reply's ``metadata["generate_reason"]`` and the end event's
    ``outcome`` (a failed run raises and has no reply)."""

    COMPLETED = "COMPLETED"
    SUSPENDED = "SUSPENDED"
    INTERRUPTED = "INTERRUPTED"
    MAX_ITERATIONS = "MAX_ITERATIONS"
    ALL_TOOLS_DENIED = "ALL_TOOLS_DENIED"
    FAILED = "FAILED"


class SuspendKind(enum.StrEnum):
    """Why a suspended turn waits: a permission question, or a tool's outside result."""

    PERMISSION_ASKING = "PERMISSION_ASKING"
    TOOL_SUSPENDED = "TOOL_SUSPENDED"


def ask(call: Any, prompt: str, data: Mapping[str, Any] | None = None) -> PendingInteraction:
    """A middleware's "ask the user first" for ``call`` (a ``ToolCall``)."""
    return _pending(call, "confirm", prompt, data)


def await_external(
    call: Any, prompt: str, data: Mapping[str, Any] | None = None
) -> PendingInteraction:
    """A middleware's "the result comes from outside" for ``call`` (a ``ToolCall``)."""
    return _pending(call, "external_result", prompt, data)


def _pending(
    call: Any, kind: Literal["confirm", "external_result"], prompt: str, data: Any
) -> PendingInteraction:
    use = call.use
    return PendingInteraction(
        use.id, use.name, kind, str(prompt), dict(use.input), dict(data or {})
    )


# --------------------------------------------------------------------------- answers


@attrs.frozen
class Approve:
    """Run the held-back tool call now; ``remember``: and calls like it from now on (a
    permission plugin adds an allow rule; without one it changes nothing)."""

    tool_use_id: str
    remember: bool = attrs.field(
        default=False, kw_only=True, validator=attrs.validators.instance_of(bool)
    )


@attrs.frozen
class Reject:
    """Do not run it: the model gets a ``denied`` result with ``reason``."""

    tool_use_id: str
    reason: str = "rejected by the user"


@attrs.frozen
class ExternalResult:
    """The tool's result, produced outside (``state="error"`` for a failure)."""

    tool_use_id: str
    output: str | Sequence[OutputBlock] = ""
    state: Literal["success", "error"] = "success"

    def result(self, tool: str) -> ToolResultBlock:
        out = self.output
        blocks = (TextBlock(out),) if isinstance(out, str) else tuple(out)
        if not all(isinstance(b, (TextBlock, ImageBlock, DataBlock)) for b in blocks):
            raise AnswerError(f"ExternalResult {self.tool_use_id!r}: output holds non-blocks")
        return ToolResultBlock(self.tool_use_id, tool, blocks, self.state)


Answer: TypeAlias = Approve | Reject | ExternalResult
_FITS = {
    Approve: ("confirm",),
    Reject: ("confirm", "external_result"),
    ExternalResult: ("external_result",),
}


def match_answers(
    turn: TurnContext, answers: Iterable[Answer]
) -> list[tuple[PendingInteraction, Answer]]:
    """Pair each answer with the interaction it answers; raise before anything changes.

    An answer to nothing pending (or to one already answered), two answers to one id, or
    an answer of the wrong kind (``Approve`` for an external result) is a typed error.
    """
    pending = {p.tool_use_id: p for p in turn.pending}
    seen: set[str] = set()
    pairs: list[tuple[PendingInteraction, Answer]] = []
    for answer in answers:
        if not isinstance(answer, (Approve, Reject, ExternalResult)):
            raise AnswerError(
                f"answers are Approve, Reject or ExternalResult, got {type(answer).__name__}"
            )
        uid = answer.tool_use_id
        if uid in seen:
            raise DuplicateAnswer(f"two answers to tool_use {uid!r} in one call")
        seen.add(uid)
        found = pending.get(uid)
        if found is None:
            waiting = ", ".join(sorted(pending)) or "nothing"
            raise UnknownInteraction(
                f"no pending interaction for tool_use {uid!r} (already answered, or never "
                f"asked); pending: {waiting}"
            )
        if found.kind not in _FITS[type(answer)]:
            raise AnswerError(
                f"{type(answer).__name__} does not answer a {found.kind!r} interaction "
                f"(tool_use {uid!r}, tool {found.tool!r})"
            )
        if isinstance(answer, ExternalResult):
            answer.result(found.tool)  # a bad output is refused now, before anything changes
        pairs.append((found, answer))
    return pairs


def suspend_kind(pending: Sequence[PendingInteraction]) -> SuspendKind:
    """A turn waiting on any permission question is PERMISSION_ASKING."""
    if any(p.kind == "confirm" for p in pending):
        return SuspendKind.PERMISSION_ASKING
    return SuspendKind.TOOL_SUSPENDED


def describe(pending: Sequence[PendingInteraction]) -> list[dict[str, Any]]:
    """The pending interactions as plain data (reply metadata, run events, the CLI)."""
    return [
        {
            "tool_use_id": p.tool_use_id,
            "tool": p.tool,
            "kind": p.kind,
            "prompt": p.prompt,
            "input": p.input,
            "data": p.data,
        }
        for p in pending
    ]
