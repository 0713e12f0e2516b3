"""Many random ids made of near-collision pieces: the G13 injectivity corpus.

Pieces that encodings and filesystems tend to confuse (case, Unicode normal forms, escapes,
separators, the escape character itself), glued at random: a set of N distinct ids checks
N * (N - 1) / 2 pairs at once. Seeded, so a failure reproduces.
"""

from __future__ import annotations

import random

PIECES = (
    "a", "A", "b", "B", "~", "~7e", "~2f", "_", "-", ".", "..", "/", "\\", "%", "%2F", "7e",
    "\u00e9", "e\u0301", "\u00c5", "\u212b", "A\u030a", "\u00df", "ss", "SS", "\u0130", "i\u0307",
    "{", "}", "*", "?", "[", ":", " ", "\t", "\n", "\x01", "\x7f", "\ufeff", "\u200b",
    "\U0001f600", "\ud7ff", "\uffff", "0", "00", "1",
)  # fmt: skip


def random_ids(count: int, *, seed: int = 13, max_pieces: int = 8) -> list[str]:
    """``count`` distinct non-empty ids built from ``PIECES`` (deterministic for a seed)."""
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < count:
        out.add("".join(rng.choices(PIECES, k=rng.randint(1, max_pieces))))
    return sorted(out)
