"""The ``plan_mode_context`` section: its shape, reading every stored form, writing ours.

The reference (AgentScope 2.0) stores ``{"plan_active": bool, "current_plan_file": str|null}``;
we write exactly that, so an export round-trips. One field is ours: ``plan_text``, the plan
itself, written only when no workspace holds the plan file (see ``docs/plan-mode.md``: plan
mode keeps working without a workspace, and the plan stays with the session that made it).

Slots saved before sections became plugin-owned hold the kernel's old minimal shape
``{"active": bool, "plan_file": str|null}``; it is read (upcast), never refused.
"""

from __future__ import annotations

from typing import Any

import attrs

from .errors import InvalidPlanModeContext

SECTION = "plan_mode_context"

_REFERENCE = ("plan_active", "current_plan_file")
_OLD = ("active", "plan_file")
_KNOWN = frozenset((*_REFERENCE, *_OLD, "plan_text"))


@attrs.frozen
class PlanModeContext:
    """One session's plan mode, as stored (immutable: change it with ``attrs.evolve``)."""

    plan_active: bool = False
    current_plan_file: str | None = None
    """The plan's path in the session's workspace (None: no plan written to a workspace)."""
    plan_text: str | None = None
    """The plan, when no workspace was installed to hold the file (ours, not the reference's)."""
    extra: dict[str, Any] = attrs.field(factory=dict, eq=False)
    """Fields this version does not know (a newer writer's), written back unchanged."""

    @classmethod
    def from_json(cls, data: Any) -> PlanModeContext:
        """Read the section in either stored shape; a value that does not fit is a typed
        ``InvalidPlanModeContext`` naming the field (nothing is guessed)."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InvalidPlanModeContext(
                f"{SECTION}: expected an object, got {type(data).__name__}"
            )
        active = _pick(data, "plan_active", "active")
        plan_file = _pick(data, "current_plan_file", "plan_file")
        text = data.get("plan_text")
        if active is None:
            active = False
        if not isinstance(active, bool):
            raise InvalidPlanModeContext(
                f"{SECTION}.plan_active: expected true or false, got {active!r}"
            )
        if plan_file is not None and not isinstance(plan_file, str):
            raise InvalidPlanModeContext(
                f"{SECTION}.current_plan_file: expected a string or null, got {plan_file!r}"
            )
        if text is not None and not isinstance(text, str):
            raise InvalidPlanModeContext(
                f"{SECTION}.plan_text: expected a string or null, got {type(text).__name__}"
            )
        extra = {k: v for k, v in data.items() if k not in _KNOWN}
        return cls(active, plan_file, text, extra)

    def to_json(self) -> dict[str, Any]:
        """The reference's shape (plus ``plan_text`` only when set, and unknown fields kept)."""
        out: dict[str, Any] = dict(self.extra)
        out["plan_active"] = self.plan_active
        out["current_plan_file"] = self.current_plan_file
        if self.plan_text is not None:
            out["plan_text"] = self.plan_text
        return out


def _pick(data: dict[str, Any], new: str, old: str) -> Any:
    """The reference's field, else the old shape's; both present and different is refused
    (a document edited by two writers: neither value can be trusted over the other)."""
    if new in data:
        if old in data and data[old] != data[new]:
            raise InvalidPlanModeContext(
                f"{SECTION}: {new}={data[new]!r} and the old field {old}={data[old]!r} disagree"
            )
        return data[new]
    return data.get(old)
