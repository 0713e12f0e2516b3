"""The hookagent harness in one install, and its preset.

``harness_config(model=..., **overrides) -> AgentConfig`` turns on the task, permission,
workspace, memory, plan-mode, compaction and session-log plugins with the reference's
defaults (``PARTS``
says each one and why). Each plugin still works alone; the preset only fills
``plugin_options`` and ``tool_groups``.
"""

from .preset import (
    PARTS,
    SESSION_LOG_DEFAULT,
    Part,
    default_session_log,
    describe,
    harness_config,
    harness_settings,
)

__all__ = [
    "PARTS",
    "SESSION_LOG_DEFAULT",
    "Part",
    "default_session_log",
    "describe",
    "harness_config",
    "harness_settings",
]
