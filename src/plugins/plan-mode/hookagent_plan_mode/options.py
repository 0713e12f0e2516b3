"""``plugin_options["plan-mode"]`` and the rule that decides which tools run in plan mode.

The rule is a pure function of (tool name, the tool's ``read_only`` trait, the options), so
it is tested on its own and costs one frozenset lookup per tool call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .errors import PlanModeOptionsError

PLUGIN_NAME = "plan-mode"

PLAN_TOOLS = frozenset({"plan_enter", "plan_write", "plan_exit"})
"""Always allowed in plan mode: they are how a plan is made and how plan mode is left."""

DEFAULT_ALLOWED = (
    "todo_write",
    "task_requirement_propose",
    "task_output",
    "task_list",
    "agent_spawn",
)
"""Not read-only, still allowed while planning (the reference's list): keeping a todo list and
proposing requirements is planning; ``agent_spawn`` starts a subagent, which inherits plan
mode (so it is blocked the same way); ``task_output`` / ``task_list`` read a subagent's work."""

DEFAULT_PLAN_FILE = "PLAN.md"
DEFAULT_MAX_PLAN_CHARS = 64_000
_MAX_PLAN_CHARS_CEILING = 4_000_000
_KEYS = frozenset({"allow_tools", "also_allow", "plan_file", "max_plan_chars", "banner"})


@attrs.frozen
class PlanModeOptions:
    """The validated options of one configuration."""

    allowed: frozenset[str] = attrs.field(default=frozenset(DEFAULT_ALLOWED) | PLAN_TOOLS)
    """Tool names that run in plan mode although they are not read-only (plan tools included)."""
    plan_file: str = DEFAULT_PLAN_FILE
    max_plan_chars: int = DEFAULT_MAX_PLAN_CHARS
    banner: str | None = None
    """Replaces the default banner text (the plan file's name is appended to it)."""

    def allows(self, name: str, read_only: bool | None) -> bool:
        """May this tool run while plan mode is active?

        ``read_only`` is the tool's own declaration, None for a tool that does not exist (a
        name the model made up): it has no trait, so it is denied unless allow-listed.
        """
        return read_only is True or name in self.allowed

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> PlanModeOptions:
        """Validate ``plugin_options["plan-mode"]``; a bad key or value names itself."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise PlanModeOptionsError(
                f'plugin_options["{PLUGIN_NAME}"] must be a mapping, got {type(raw).__name__}'
            )
        unknown = sorted(str(k) for k in raw if k not in _KEYS)
        if unknown:
            raise PlanModeOptionsError(
                f'plugin_options["{PLUGIN_NAME}"]: unknown option(s) {", ".join(unknown)}; '
                f"known: {', '.join(sorted(_KEYS))}"
            )
        base = _names(raw, "allow_tools") if "allow_tools" in raw else frozenset(DEFAULT_ALLOWED)
        extra = _names(raw, "also_allow") if "also_allow" in raw else frozenset()
        plan_file = raw.get("plan_file", DEFAULT_PLAN_FILE)
        check_plan_path(plan_file, f'plugin_options["{PLUGIN_NAME}"]["plan_file"]')
        limit = raw.get("max_plan_chars", DEFAULT_MAX_PLAN_CHARS)
        if (
            not isinstance(limit, int)
            or isinstance(limit, bool)
            or not 1 <= limit <= _MAX_PLAN_CHARS_CEILING
        ):
            raise PlanModeOptionsError(
                f'plugin_options["{PLUGIN_NAME}"]["max_plan_chars"] must be an int in '
                f"1..{_MAX_PLAN_CHARS_CEILING}, got {limit!r}"
            )
        banner = raw.get("banner")
        if banner is not None and (not isinstance(banner, str) or not banner.strip()):
            raise PlanModeOptionsError(
                f'plugin_options["{PLUGIN_NAME}"]["banner"] must be a non-empty string, '
                f"got {banner!r}"
            )
        return cls(base | extra | PLAN_TOOLS, plan_file, limit, banner)


def _names(raw: Mapping[str, Any], key: str) -> frozenset[str]:
    value = raw[key]
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise PlanModeOptionsError(
            f'plugin_options["{PLUGIN_NAME}"]["{key}"] must be a list of tool names, got {value!r}'
        )
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad:
        raise PlanModeOptionsError(
            f'plugin_options["{PLUGIN_NAME}"]["{key}"]: tool names must be non-empty '
            f"strings, got {bad[0]!r}"
        )
    return frozenset(value)


def check_plan_path(path: Any, where: str) -> str:
    """A plan file path: relative POSIX, no ``..``, no empty part, no backslash.

    The workspace enforces its own bounds on every access; this catches a bad setting when
    the configuration is built instead of at the first ``plan_write``.
    """
    if not isinstance(path, str) or not path.strip():
        raise PlanModeOptionsError(f"{where} must be a non-empty relative path, got {path!r}")
    parts = path.split("/")
    if (
        path.startswith("/")
        or "\\" in path
        or "\x00" in path
        or any(p in ("", ".", "..") for p in parts)
        or (len(parts[0]) >= 2 and parts[0][1] == ":")
    ):
        raise PlanModeOptionsError(
            f"{where} must be a relative POSIX path inside the workspace (no '..', no "
            f"leading '/', no empty or '.' parts), got {path!r}"
        )
    return path
