"""The CLI's own typed errors (everything else comes from ``hookagent.errors``)."""

from __future__ import annotations

from hookagent.errors import HookagentError, InvalidState, SessionStoreError


class SessionNotFound(SessionStoreError):
    """The (user_id, session_id) slot a command names does not exist in the store."""

    def __init__(self, user_id: str, session_id: str) -> None:
        self.user_id, self.session_id = user_id, session_id
        super().__init__(f"no session {session_id!r} for user {user_id!r} in this store")


class SessionExists(SessionStoreError):
    """An import would overwrite a stored session (pass ``--force`` to allow it)."""

    def __init__(self, user_id: str, session_id: str, version: int | None) -> None:
        self.user_id, self.session_id, self.version = user_id, session_id, version
        at = "" if version is None else f" (version {version})"
        super().__init__(
            f"session {session_id!r} of user {user_id!r} already exists{at}; "
            "pass --force to overwrite it"
        )


class BadImportSpec(HookagentError, ValueError):
    """A ``--tool MODULE:FUNCTION`` or ``--plugin MODULE[:NAME]`` that cannot be used."""

    def __init__(self, option: str, spec: str, why: str) -> None:
        self.option, self.spec = option, spec
        super().__init__(f"{option} {spec!r}: {why}")


class SpecModuleNotFound(BadImportSpec):
    """The spec's module is not importable (not installed, not on the path, misspelt)."""


class SpecImportFailed(BadImportSpec):
    """The spec's module exists but raised while it was imported."""


class SpecAttributeNotFound(BadImportSpec):
    """The module has no attribute of the spec's name."""


class SpecNotCallable(BadImportSpec):
    """``--tool`` names something that is not a function."""


class ForeignStateFormat(InvalidState):
    """``sessions import`` was given a file in neither format it reads."""


class AgentScopeFormatError(InvalidState):
    """An AgentScope AgentState file that does not fit its format, naming the JSON path."""

    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(f"AgentScope state: {path}: {problem}")
