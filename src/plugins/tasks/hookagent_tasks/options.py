"""``AgentConfig(plugin_options={"tasks": {...}})``: what the projection shows, and the
grounding note it adds to the system prompt. Checked once, when the configuration is
prepared; a bad key or value refuses the configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .errors import TasksOptionsError
from .projection import DEFAULT_GROUNDING, SHOW, View

PLUGIN = "tasks"
"""The plugin's entry-point name: its key in ``plugin_options`` and its tool group."""
KEYS = ("project", "show", "grounding")


@attrs.frozen
class TasksOptions:
    """``project``: build the TASK_STATE projection at all (default True).
    ``show``: which parts (``todos``, ``requirements``, ``verification``; default all).
    ``grounding``: True for the default note, False for none, or the note's text."""

    project: bool = True
    view: View = attrs.Factory(View)
    grounding: str = DEFAULT_GROUNDING
    on: bool = True
    """Not an option: whether the configuration asked for the plugin at all (it names it in
    ``plugin_options`` or enables the ``tasks`` tool group); set at configure time."""

    @classmethod
    def from_config(cls, options: Mapping[str, Any] | None) -> TasksOptions:
        if options is None:
            return cls()
        if not isinstance(options, Mapping):
            raise TasksOptionsError(
                f'plugin_options["tasks"] must be a mapping, got {type(options).__name__}'
            )
        unknown = sorted(set(options) - set(KEYS))
        if unknown:
            raise TasksOptionsError(
                f'plugin_options["tasks"]: unknown key(s) {unknown}; accepted: {", ".join(KEYS)}'
            )
        project = options.get("project", True)
        if type(project) is not bool:
            raise TasksOptionsError(
                f'plugin_options["tasks"]["project"] must be true or false, got {project!r}'
            )
        show = options.get("show", SHOW)
        if isinstance(show, str) or not isinstance(show, (list, tuple, set, frozenset)):
            raise TasksOptionsError(
                f'plugin_options["tasks"]["show"] must be a list of {", ".join(SHOW)}, got {show!r}'
            )
        bad = sorted(str(s) for s in show if s not in SHOW)
        if bad:
            raise TasksOptionsError(
                f'plugin_options["tasks"]["show"]: {bad} not among {", ".join(SHOW)}'
            )
        grounding = options.get("grounding", True)
        if grounding is True:
            note = DEFAULT_GROUNDING
        elif grounding is False or grounding is None:
            note = ""
        elif isinstance(grounding, str):
            note = grounding.strip()
        else:
            raise TasksOptionsError(
                f'plugin_options["tasks"]["grounding"] must be true, false or a string, '
                f"got {type(grounding).__name__}"
            )
        view = View(
            todos="todos" in show,
            requirements="requirements" in show,
            verification="verification" in show,
        )
        return cls(project=project, view=view, grounding=note)
