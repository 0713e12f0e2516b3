"""Record every hook call on a plugin manager (one monitoring hook, as pytest's HookRecorder)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pluggy


@attrs.frozen
class HookCall:
    name: str
    kwargs: dict[str, Any]
    plugins: tuple[str, ...]


class HookRecorder:
    """``recorder.calls``, ``recorder.named(name)``; ``close()`` stops recording."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.calls: list[HookCall] = []

        def before(name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
            self.calls.append(HookCall(name, dict(kwargs), tuple(i.plugin_name for i in impls)))

        def after(outcome: Any, name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
            return None

        self._undo = pm.add_hookcall_monitoring(before, after)

    def named(self, name: str) -> list[HookCall]:
        return [c for c in self.calls if c.name == name]

    def names(self) -> list[str]:
        return [c.name for c in self.calls]

    def close(self) -> None:
        self._undo()
