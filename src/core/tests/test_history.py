"""``History`` and ``HistoryView`` behave as lists do, while they share what they can.

Every operation is checked against a plain list: a history over a shared base (a tuple, a
store's log), the views taken of it at any moment (each must keep showing its snapshot, and
its own changes must never reach the history) and the change mark (``unchanged_prefix``
never claims an index that changed since the last commit).
"""

from __future__ import annotations

import copy
import pickle
import random
from typing import Any

import pytest
from hookagent import History, HistoryView, Msg


def msgs(n: int, tag: str = "m") -> list[Msg]:
    return [Msg.user(f"{tag}{i}") for i in range(n)]


def check_same(history: History | HistoryView, ref: list[Msg]) -> None:
    assert len(history) == len(ref)
    assert list(history) == ref
    assert list(reversed(history)) == ref[::-1]
    assert history == ref
    for i in (0, len(ref) // 2, len(ref) - 1, -1, -len(ref)):
        if ref:
            assert history[i] is ref[i]
    for s in (slice(None), slice(1, -1), slice(len(ref) // 2, None), slice(None, None, 2)):
        assert history[s] == ref[s]
    with pytest.raises(IndexError):
        history[len(ref)]
    with pytest.raises(IndexError):
        history[-len(ref) - 1]


def mutate(target: Any, ref: list[Msg], rng: random.Random, fresh: list[Msg]) -> None:
    """One random list operation, applied to ``target`` and to the reference list alike."""
    size = len(ref)
    i = rng.randrange(-size - 1, size + 2) if size else 0
    j = rng.randrange(-size - 1, size + 2) if size else 0
    new = fresh.pop()
    op = rng.choice(
        ["append", "append", "append", "extend", "insert", "set", "set_slice", "del",
         "del_slice", "del_tail", "pop", "pop_end", "clear", "reverse", "iadd", "remove"]
    )  # fmt: skip
    if op == "append":
        target.append(new), ref.append(new)
    elif op == "extend":
        more = [new, fresh.pop()]
        target.extend(more), ref.extend(more)
    elif op == "iadd":
        target += [new]
        ref += [new]
    elif op == "insert":
        target.insert(i, new), ref.insert(i, new)
    elif op == "set" and size and -size <= i < size:
        target[i] = new
        ref[i] = new
    elif op == "set_slice":
        target[i:j] = [new]
        ref[i:j] = [new]
    elif op == "del" and size and -size <= i < size:
        del target[i]
        del ref[i]
    elif op == "del_slice":
        step = rng.choice([None, 1, 2, -1])
        del target[i:j:step]
        del ref[i:j:step]
    elif op == "del_tail":
        del target[i:]
        del ref[i:]
    elif op == "pop" and size and -size <= i < size:
        assert target.pop(i) is ref.pop(i)
    elif op == "pop_end" and size:
        assert target.pop() is ref.pop()
    elif op == "clear" and rng.random() < 0.2:
        target.clear(), ref.clear()
    elif op == "reverse" and rng.random() < 0.3:
        target.reverse(), ref.reverse()
    elif op == "remove" and size:
        victim = ref[rng.randrange(size)]
        target.remove(victim), ref.remove(victim)


@pytest.mark.parametrize("seed", range(120))
def test_history_and_its_views_behave_as_lists(seed: int) -> None:
    rng = random.Random(seed)
    start = msgs(rng.randrange(0, 12), "s")
    log = list(start) + msgs(3, "later")  # a store's log: more than the loaded length
    kind = rng.choice(["tuple", "shared", "list"])
    if kind == "tuple":
        history = History(tuple(start), committed=True)
    elif kind == "shared":
        history = History.shared(log, len(start))
    else:
        history = History(start, committed=True)
    log_before = list(log)
    ref = list(start)
    committed = list(start)
    views: list[tuple[HistoryView, list[Msg]]] = []
    fresh = msgs(400, f"n{seed}-")
    for _ in range(60):
        roll = rng.random()
        if roll < 0.2:
            views.append((history.view(), list(ref)))
        elif roll < 0.3 and views:
            view, snap = rng.choice(views)
            mutate(view, snap, rng, fresh)  # a shaper changing its request
        elif roll < 0.35:
            history.mark_committed()
            committed = list(ref)
        else:
            mutate(history, ref, rng, fresh)
        check_same(history, ref)
        keep = history.unchanged_prefix
        assert keep <= len(ref) and ref[:keep] == committed[:keep]
        for view, snap in views:
            check_same(view, snap)
    assert log == log_before  # the shared log was never written through the history


def test_a_shared_log_grows_behind_the_history_unseen() -> None:
    log = msgs(5)
    history = History.shared(log, 3)
    assert history.unchanged_prefix == 3 and list(history) == log[:3]
    log.append(Msg.user("appended by the store"))
    history.append(Msg.user("the call's"))
    assert [m.text for m in history] == ["m0", "m1", "m2", "the call's"]
    assert len(log) == 6
    with pytest.raises(ValueError, match="outside the log"):
        History.shared(log, 7)


def test_cutting_the_end_moves_a_bound_and_never_writes_the_base() -> None:
    log = msgs(6)
    history = History.shared(log, 6)
    assert history.pop() is log[5]
    del history[3:]
    assert list(history) == log[:3] and len(log) == 6
    assert history.unchanged_prefix == 3
    history.append(Msg.user("x"))
    assert [m.text for m in log] == [f"m{i}" for i in range(6)]


def test_a_view_is_a_snapshot_and_its_changes_stay_its_own() -> None:
    history = History(tuple(msgs(3)), committed=True)
    history.append(Msg.user("tail"))
    view = history.view()
    assert not view.copied
    history.append(Msg.user("after the view"))
    history[3] = Msg.user("tail changed")  # the tail the view shares: copied first
    assert [m.text for m in view] == ["m0", "m1", "m2", "tail"]
    view.insert(0, Msg.system("transient"))
    assert view.copied and view[0].text == "transient" and len(view) == 5
    assert [m.text for m in history] == ["m0", "m1", "m2", "tail changed", "after the view"]
    z = Msg.user("z")
    assert view + [z] == [*view, z] and [z] + view == [z, *view]  # noqa: RUF005
    assert view.copy() == list(view)


def test_copies_and_pickles_are_plain_detached_histories() -> None:
    log = msgs(4)
    history = History.shared(log, 4)
    history.append(Msg.user("new"))
    for other in (copy.copy(history), copy.deepcopy(history), pickle.loads(pickle.dumps(history))):
        assert isinstance(other, History) and other == history
        other.append(Msg.user("only in the copy"))
        assert len(history) == 5
    view = history.view()
    assert pickle.loads(pickle.dumps(view)) == list(view)
    assert copy.copy(view) == view


def test_extending_a_history_with_itself_doubles_it() -> None:
    history = History.shared(msgs(2), 2)
    history.append(Msg.user("t"))
    history.extend(history)
    assert [m.text for m in history] == ["m0", "m1", "t", "m0", "m1", "t"]
    history += history.view()
    assert len(history) == 12
