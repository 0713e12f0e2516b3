"""Validation before commit: a proposal that fails any check is never written.

The built-in checks refuse an empty summary and one over its token budget; then every
``hookagent_validate_compaction`` implementation may refuse it by returning a reason. The
plugin's own implementation (``pinned_ids_survive``) refuses a proposal that lost a pinned
message, whoever planned the cut.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from hookagent.messages import Msg

from .cut import is_pinned


@attrs.frozen
class CompactionProposal:
    """A compaction about to be committed, as validators see it (read-only values).

    ``history``: the effective history it replaces (a previous summary at its head, if any);
    ``messages``: what would replace it (the new summary message, pinned messages, the
    kept tail); ``summarised``: the messages summarised away; ``summary``: the new summary
    text (without the header); ``previous_summary``: the one it chains; ``summary_tokens``
    and ``budget_tokens``: its size and the limit it must stay within.
    """

    history: tuple[Msg, ...]
    messages: tuple[Msg, ...]
    summarised: tuple[Msg, ...]
    summary: str
    previous_summary: str | None
    summary_tokens: int
    budget_tokens: int
    user_id: str = ""
    session_id: str = ""


def check_summary(summary: str | None, tokens: int, budget: int) -> str | None:
    """The built-in checks: a reason to refuse, or None."""
    if summary is None or not summary.strip():
        return "the summary is empty"
    if tokens > budget:
        return f"the summary holds {tokens} tokens, over its budget of {budget}"
    return None


def pinned_ids_survive(proposal: CompactionProposal) -> str | None:
    """The default validator: every pinned message of the history is in the new one."""
    kept = {m.id for m in proposal.messages}
    lost = [m.id for m in proposal.history if is_pinned(m) and m.id not in kept]
    if lost:
        return f"pinned message(s) {', '.join(lost[:5])} would be lost"
    return None


async def run_validators(
    validators: Sequence[Callable[..., Any]], proposal: CompactionProposal
) -> str | None:
    """The first refusal among ``validators`` (each may be async), or None."""
    for validate in validators:
        reason = validate(proposal=proposal)
        if inspect.isawaitable(reason):
            reason = await reason
        if reason is not None:
            if not isinstance(reason, str) or not reason.strip():
                return f"a validator refused the summary (returned {reason!r})"
            return reason
    return None
