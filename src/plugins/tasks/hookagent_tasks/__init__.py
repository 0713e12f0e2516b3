"""Task state for hookagent (plugin ``tasks``): ``todo_write``, the trusted task contract
with verification evidence, and the transient TASK_STATE projection.

The model keeps a todo list and may propose requirements; only trusted application code
(``TaskAdmin``, the ``hookagent tasks`` commands) begins tasks, confirms requirements and
records verification evidence. See docs/tasks.md.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .admin import TaskAdmin
from .contract import (
    begin_task,
    decide,
    invalidate_subject,
    propose_requirement,
    record_verification,
    set_subject_version,
)
from .errors import (
    BindingMismatch,
    InvalidDecision,
    InvalidProposal,
    InvalidTasksSection,
    InvalidVerification,
    RequirementNotConfirmed,
    RequirementNotFound,
    TaskArgumentError,
    TaskLimitExceeded,
    TaskRevisionConflict,
    TaskScopeError,
    TasksError,
    TasksOptionsError,
    TodoValidationError,
    TrustedFunctionAsTool,
)
from .guard import is_trusted, trusted
from .model import (
    SECTION,
    Binding,
    Decision,
    Requirement,
    Task,
    TasksContext,
    TaskScope,
    VerificationReport,
)
from .options import TasksOptions
from .projection import TASK_STATE_ID, View, project, render_state
from .sectionjson import parse_section, section_json
from .todos import render_result, replace_todos, validate_todos
from .verifiers import (
    Check,
    CommandVerifier,
    FunctionVerifier,
    Verifier,
    run_verification,
    run_verification_sync,
)

__all__ = [
    "SECTION",
    "TASK_STATE_ID",
    "Binding",
    "BindingMismatch",
    "Check",
    "CommandVerifier",
    "Decision",
    "FunctionVerifier",
    "InvalidDecision",
    "InvalidProposal",
    "InvalidTasksSection",
    "InvalidVerification",
    "Requirement",
    "RequirementNotConfirmed",
    "RequirementNotFound",
    "Task",
    "TaskAdmin",
    "TaskArgumentError",
    "TaskLimitExceeded",
    "TaskRevisionConflict",
    "TaskScope",
    "TaskScopeError",
    "TasksContext",
    "TasksError",
    "TasksOptions",
    "TasksOptionsError",
    "TodoValidationError",
    "TrustedFunctionAsTool",
    "VerificationReport",
    "Verifier",
    "View",
    "__version__",
    "begin_task",
    "decide",
    "invalidate_subject",
    "is_trusted",
    "parse_section",
    "project",
    "propose_requirement",
    "record_verification",
    "render_result",
    "render_state",
    "replace_todos",
    "run_verification",
    "run_verification_sync",
    "section_json",
    "set_subject_version",
    "trusted",
    "validate_todos",
]
