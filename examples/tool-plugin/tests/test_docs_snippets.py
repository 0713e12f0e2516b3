"""The plugin-author guides show code copied from the examples: keep every copy exact.

A fenced block whose first line is ``# From examples/<path>`` must appear verbatim (minus
that line) in that file, so a change to an example that the guide no longer matches fails
here instead of misleading readers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GUIDES = ("writing-a-tool-plugin.md", "writing-a-store-plugin.md", "testing-plugins.md")
BLOCK = re.compile(r"^```[a-z]*\n# From (examples/\S+)\n(.*?)^```$", re.M | re.S)


def snippets(guide: str) -> list[tuple[str, str]]:
    return BLOCK.findall((ROOT / "docs" / guide).read_text(encoding="utf-8"))


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_snippets_are_copied_from_the_examples(guide: str) -> None:
    found = snippets(guide)
    assert len(found) >= 4, f"docs/{guide} shows no code copied from the examples"
    for source, code in found:
        text = (ROOT / source).read_text(encoding="utf-8")
        assert code in text, f"docs/{guide}: a snippet is no longer in {source}:\n{code}"
