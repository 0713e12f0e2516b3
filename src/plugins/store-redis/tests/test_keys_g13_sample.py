"""G13 at the plan's scale for Redis keys: (user, session, key) never share a key name."""

from __future__ import annotations

import random

from hookagent.store.ids import encode_id
from hookagent.testing.idsample import random_ids
from hookagent_store_redis.keys import KeyLayout

IDS = random_ids(20_000)


def test_slot_keys_are_injective_over_a_million_pairs() -> None:
    rng = random.Random(13)
    layout = KeyLayout("app")
    triples = {(rng.choice(IDS), rng.choice(IDS), rng.choice(IDS[:50])) for _ in range(1_000_000)}
    heads = {layout.session(u, s).head(encode_id(k)) for u, s, k in triples}
    assert len(heads) == len(triples)
    users = {layout.user_index(u) for u in IDS}
    assert len(users) == len(IDS)
