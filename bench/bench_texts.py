"""The standard workload's strings, byte-for-byte those of the peers' harness (``common.py``).

Copied rather than imported so that ``bench/`` runs without ``shared/``; ``peer_hookagent.py``
checks at import time that both produce the same strings. The caches hold 65,536 strings
each (the harness's hold 8,192): ``workload.py`` makes the texts of a 10,000-call run before
the clock starts, and a smaller LRU cache would evict them in order and make every one again
inside the timed calls.
"""

from __future__ import annotations

import functools
import random
import re

TEXT_LEN = 200
TOOL_NAME = "lookup"
W1_USER, W1_SESSION = "user-w1", "sess-w1"


def _vocab() -> list[str]:
    rng = random.Random(20261130)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(3000)]


_VOCAB = _vocab()


def _text(prefix: str, seed: int) -> str:
    """prefix + pseudo-random words, exactly TEXT_LEN characters (compresses like prose)."""
    rng = random.Random(seed)
    parts = [prefix]
    size = len(prefix)
    while size < TEXT_LEN:
        w = rng.choice(_VOCAB) + " "
        parts.append(w)
        size += len(w)
    return "".join(parts)[:TEXT_LEN]


@functools.lru_cache(maxsize=65536)
def user_text(n: int) -> str:
    return _text(f"u{n}| look up key {n}: ", 3 * n)


@functools.lru_cache(maxsize=65536)
def tool_text(n: int) -> str:
    return _text(f"r{n}| value of key {n}: ", 3 * n + 1)


@functools.lru_cache(maxsize=65536)
def final_text(n: int) -> str:
    return _text(f"a{n}| key {n} holds: ", 3 * n + 2)


_NUM = re.compile(r"^[ura](\d+)\|")


def parse_n(text: str) -> int:
    m = _NUM.match(text or "")
    if not m:
        raise ValueError(f"scripted model cannot parse turn number from {text[:40]!r}")
    return int(m.group(1))


def call_id(n: int) -> str:
    return f"call_{n}"


assert len(user_text(7)) == len(tool_text(7)) == len(final_text(7)) == TEXT_LEN
