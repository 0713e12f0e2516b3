"""A store operation killed at a planted point, in a forked child (the crash tests' tool)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def die_in_child(patch: Callable[[], None], work: Callable[[], Any]) -> None:
    """Run ``work`` in a forked child that dies (``os._exit(9)``) where ``patch`` says."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            patch()
            work()
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9  # it died at the planted point


def kill_at(name: str, nth: int = 1) -> Callable[[], None]:
    """The child's ``nth`` call of ``os.<name>`` is its death (a SIGKILL at that point)."""

    def patch() -> None:
        real, calls = getattr(os, name), [0]

        def dying(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if calls[0] == nth:
                os._exit(9)
            return real(*args, **kwargs)

        setattr(os, name, dying)

    return patch
