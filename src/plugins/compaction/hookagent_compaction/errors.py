"""The compaction plugin's own errors (all ``AgentError`` subclasses)."""

from __future__ import annotations

from hookagent.errors import AgentError, ConfigurationError, ContextLengthExceeded


class CompactionOptionsError(ConfigurationError):
    """An option in ``plugin_options["compaction"]`` that cannot be used (names it and why)."""


class CompactionError(AgentError):
    """Base of the errors a compaction raises into a call."""


class ContextBudgetExceeded(CompactionError, ContextLengthExceeded):
    """The request does not fit its token budget and no compaction could be committed.

    ``tokens`` is the request's size, ``budget`` the limit it is over (the model's declared
    window, or the provider's refusal), ``reason`` why compaction did not help. Nothing was
    changed in the stored history.
    """

    def __init__(self, tokens: int, budget: int | None, reason: str) -> None:
        self.tokens, self.budget, self.reason = tokens, budget, reason
        over = (
            "the provider refused it as over its context length"
            if budget is None
            else f"over its budget of {budget} tokens"
        )
        super().__init__(
            f"the request holds {tokens} tokens, {over}, and the history was not compacted: "
            f"{reason}"
        )


class OffloadError(CompactionError):
    """An offloaded tool result that cannot be read back (bad path, missing, tampered)."""
