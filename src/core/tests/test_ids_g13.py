"""G13 at the plan's scale: encode_id is injective and reversible over a million pairs and more."""

from __future__ import annotations

import unicodedata
from collections import Counter

from hookagent.store.ids import check_id, decode_id, encode_id
from hookagent.testing.corpus import HOSTILE_IDS
from hookagent.testing.idsample import random_ids

SAMPLE = 20_000  # distinct ids: about 2 * 10**8 pairs, against the plan's 10**6


def test_encoding_is_injective_and_reversible_over_the_sample() -> None:
    ids = [*random_ids(SAMPLE), *(h for h in HOSTILE_IDS if h)]
    seen: dict[str, str] = {}
    for value in ids:
        check_id(value)
        encoded = encode_id(value)
        assert seen.setdefault(encoded, value) == value, (value, seen[encoded])
        assert decode_id(encoded) == value
    assert len(seen) == len(set(ids))


def test_the_sample_really_holds_near_collisions() -> None:
    """The sample is worth something only if it holds the confusable forms side by side."""
    ids = set(random_ids(SAMPLE))
    assert {"a", "A", "\u00e9", "e\u0301", "\u00c5", "\u212b", "ss", "SS", "~", "_"} <= ids
    for fold in (str.casefold, lambda v: unicodedata.normalize("NFC", v)):
        groups = Counter(fold(v) for v in ids)
        assert sum(n > 1 for n in groups.values()) > 100  # many differ only by case / form
