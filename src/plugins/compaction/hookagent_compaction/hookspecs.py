"""The hook the compaction plugin adds: validators a proposed compaction must pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookagent.hookspecs import hookspec

if TYPE_CHECKING:
    from .validate import CompactionProposal


@hookspec
def hookagent_validate_compaction(proposal: CompactionProposal) -> Any:
    """Refuse a compaction before it is committed. May be async.

    :param proposal: a ``CompactionProposal``: the history, what would replace it, the
        messages summarised away and the summary text with its token count and budget.

    Result: None to accept, or a non-empty str saying why it is refused (anything else
    refuses it too). Every implementation is asked; the first refusal wins. A refused
    compaction changes nothing: the call goes on with the uncompacted history if it fits,
    else fails with ``ContextBudgetExceeded``. The plugin's own implementation refuses a
    proposal that lost a pinned message (``metadata={"pinned": True}``).
    """
