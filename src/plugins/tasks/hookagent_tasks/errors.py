"""The typed errors of the tasks plugin.

Every refusal names what was wrong and leaves the section exactly as it was: the rules are
checked on a copy before anything is stored.
"""

from __future__ import annotations

from hookagent.errors import AgentError, ConfigurationError, InvalidState


class TasksError(AgentError):
    """Base of every error the tasks plugin raises on purpose."""


class InvalidTasksSection(InvalidState):
    """The stored ``tasks_context`` does not fit the schema (names the field)."""


class TaskArgumentError(TasksError, ValueError):
    """Base of the refusals of a bad argument (a wrong type, value or length)."""


class TodoValidationError(TaskArgumentError):
    """A ``todo_write`` list that breaks a rule (status, blank content, two in progress)."""


class TaskLimitExceeded(TaskArgumentError):
    """A value over one of the documented limits (lengths, 64 requirements, ...)."""


class TaskRevisionConflict(TasksError):
    """``expected_revision`` is not the section's revision: someone changed it meanwhile."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"tasks_context is at revision {actual}, not the expected {expected}: it changed "
            "since you read it; read it again and decide on the current state"
        )
        self.expected = expected
        self.actual = actual


class TaskScopeError(TaskArgumentError):
    """No task has begun, or a task_id is reused for another objective."""


class InvalidProposal(TaskArgumentError):
    """A requirement proposal with a bad kind, blank text or blank source_ref."""


class RequirementNotFound(TasksError, KeyError):
    """No requirement with that id in the current task."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class InvalidDecision(TaskArgumentError):
    """A decision that is not CONFIRMED/REJECTED with an authority USER/CALLER."""


class RequirementNotConfirmed(TaskArgumentError):
    """A verification for a requirement that is not a CONFIRMED acceptance criterion."""


class BindingMismatch(TaskArgumentError):
    """Evidence bound to another (task_id, contract_version, subject_version) than the current."""


class InvalidVerification(TaskArgumentError):
    """A verification report with a bad outcome, id or reason."""


class TasksOptionsError(TasksError, ConfigurationError):
    """``plugin_options["tasks"]`` holds an unknown key or a value of the wrong type."""


class TrustedFunctionAsTool(TasksError, ConfigurationError):
    """A configuration offers one of the trusted contract functions to the model as a tool."""
