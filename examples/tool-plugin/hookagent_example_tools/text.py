"""Text tools: small, deterministic, and safe to give any model."""

from __future__ import annotations


def word_count(text: str) -> int:
    """Count the words (whitespace-separated runs of characters) in a text."""
    return len(text.split())
