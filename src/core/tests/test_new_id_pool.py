"""``new_id`` draws its randomness 64 ids at a time: the ids stay version-4 hex, unique,
and a forked child never repeats its parent's drawn ids."""

from __future__ import annotations

import os
import re
import threading
import uuid

from hookagent.messages import new_id


def test_ids_are_uuid4_hex_and_unique() -> None:
    ids = [new_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    for i in ids:
        assert re.fullmatch(r"[0-9a-f]{32}", i)
        u = uuid.UUID(hex=i)
        assert u.version == 4 and u.variant == uuid.RFC_4122


def test_threads_never_share_an_id() -> None:
    got: list[list[str]] = [[] for _ in range(4)]

    def draw(out: list[str]) -> None:
        out.extend(new_id() for _ in range(500))

    threads = [threading.Thread(target=draw, args=(out,)) for out in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in got for i in out]
    assert len(set(every)) == len(every) == 2000


def test_a_forked_child_draws_its_own_ids() -> None:
    new_id()  # the pool now holds drawn ids the child must not repeat
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.write(write, "".join(new_id() for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write)
    child = os.read(read, 200).decode()
    os.close(read)
    os.waitpid(pid, 0)
    mine = "".join(new_id() for _ in range(3))
    assert len(child) == 96
    assert {child[i : i + 32] for i in range(0, 96, 32)}.isdisjoint(
        {mine[i : i + 32] for i in range(0, 96, 32)}
    )
