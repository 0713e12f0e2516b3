"""G13 at the plan's scale for the file layout: paths of ids and of (user, session) slots."""

from __future__ import annotations

import random

from hookagent.testing.idsample import random_ids
from hookagent_store_jsonfile.layout import id_parts, parts_to_id, slot_parts

IDS = random_ids(20_000)  # about 2 * 10**8 id pairs


def test_id_paths_are_injective_and_reversible() -> None:
    seen: dict[tuple[str, ...], str] = {}
    for value in IDS:
        parts = tuple(id_parts(value))
        assert seen.setdefault(parts, value) == value, (value, seen[parts])
        assert parts_to_id(list(parts)) == value
        assert all(
            p not in (".", "..") and "/" not in p and 0 < len(p.encode()) <= 255 for p in parts
        )


def test_slot_paths_are_injective_over_a_million_pairs() -> None:
    rng = random.Random(13)
    pairs = {(rng.choice(IDS), rng.choice(IDS)) for _ in range(1_000_000)}
    paths = {"/".join(slot_parts(u, s)) for u, s in pairs}
    assert len(paths) == len(pairs)
