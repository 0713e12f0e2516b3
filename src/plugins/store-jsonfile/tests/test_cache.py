"""The slot LRU behind the history cache and the per-instance memory of seen incarnations."""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Any

from hookagent_store_jsonfile.cache import SlotKey, SlotLru


class _NoScan(OrderedDict[SlotKey, Any]):
    """Refuses iteration: a delete must not walk the whole memory under its lock."""

    def __iter__(self) -> Any:
        raise AssertionError("SlotLru scanned every entry")


def test_drop_never_scans_every_entry() -> None:
    lru: SlotLru[int] = SlotLru(1000)
    for i in range(500):
        lru.put(("u", f"s{i % 50}", f"k{i}"), i)
    lru._data = _NoScan(lru._data)  # the same entries, iteration now refused
    lru.drop("u", "s3", "k3")
    lru.drop("u", "s4")
    lru.drop("nobody", "none", "k")
    lru.drop("nobody", "none")
    assert lru.get(("u", "s3", "k3")) is None and lru.get(("u", "s3", "k53")) == 53
    assert all(lru.get(("u", "s4", f"k{i}")) is None for i in range(4, 500, 50))
    assert len(lru) == 500 - 1 - 10


def test_matches_a_reference_under_random_puts_drops_and_evictions() -> None:
    rng = random.Random(7)
    lru: SlotLru[int] = SlotLru(40)
    ref: OrderedDict[SlotKey, int] = OrderedDict()
    for step in range(20000):
        user, session, key = rng.choice("ab"), rng.choice("xyz"), rng.choice("pqrstuvw")
        op = rng.random()
        if op < 0.6:
            lru.put((user, session, key), step)
            ref[(user, session, key)] = step
            ref.move_to_end((user, session, key))
            while len(ref) > 40:
                ref.popitem(last=False)
        elif op < 0.75:
            assert lru.get((user, session, key)) == ref.get((user, session, key))
            if (user, session, key) in ref:
                ref.move_to_end((user, session, key))
        elif op < 0.95:
            lru.drop(user, session, key)
            ref.pop((user, session, key), None)
        else:
            lru.drop(user, session)
            for k in [k for k in ref if k[:2] == (user, session)]:
                del ref[k]
        assert list(lru._data.items()) == list(ref.items())
        held: dict[tuple[str, str], set[str]] = {}
        for k in ref:
            held.setdefault(k[:2], set()).add(k[2])
        index = {s: {v} if isinstance(v, str) else set(v) for s, v in lru._by_session.items()}
        assert index == held


def test_zero_slots_remembers_nothing() -> None:
    lru: SlotLru[int] = SlotLru(0)
    lru.put(("u", "s", "k"), 1)
    assert lru.get(("u", "s", "k")) is None and len(lru) == 0
    lru.drop("u", "s")
