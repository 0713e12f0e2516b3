"""The request and response bodies, as pydantic models: FastAPI validates requests against
them and derives the OpenAPI document from them (which schemathesis then checks)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

ID_PATTERN = r"^[A-Za-z0-9._:@-]{1,128}$"
"""Ids in paths and bodies: what every backend stores without escaping surprises."""
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200_000)]
Status = Literal[
    "queued", "starting", "running", "completed", "suspended", "interrupted", "failed", "rejected"
]
Kind = Literal["submit", "resume", "respond", "steer", "interrupt"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- requests


class SubmitBody(Strict):
    input: Text
    idempotency_key: Id | None = None


class SteerBody(SubmitBody):
    pass


class ResumeBody(Strict):
    turn_id: Id
    input: Text | None = None
    idempotency_key: Id | None = None


class InterruptBody(Strict):
    expected_run_id: Id | None = None
    idempotency_key: Id | None = None


class KeyBody(Strict):
    idempotency_key: Id | None = None


class Approve(Strict):
    kind: Literal["approve"]
    remember: bool = False


class Reject(Strict):
    kind: Literal["reject"]
    reason: Annotated[str, StringConstraints(max_length=10_000)] = "rejected by the user"


class ExternalResult(Strict):
    kind: Literal["external_result"]
    output: Annotated[str, StringConstraints(max_length=200_000)]
    state: Literal["success", "error"] = "success"


class RespondBody(Strict):
    answer: Annotated[Approve | Reject | ExternalResult, Field(discriminator="kind")]
    idempotency_key: Id | None = None


# --------------------------------------------------------------------------- responses


class TaskView(BaseModel):
    command_id: str
    kind: Kind
    status: Status
    idempotency_key: str
    seq: int
    submitted_at: float
    turn_id: str | None = None
    run_id: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float | None = None
    error: str | None = None
    error_type: str | None = None
    reply_text: str | None = None
    generate_reason: str | None = None
    replica_id: str | None = None
    target_run_id: str | None = None


class Runs(BaseModel):
    runs: list[TaskView]


class ErrorInfo(BaseModel):
    type: str
    message: str
    status: int
    detail: Any = None


class ErrorBody(BaseModel):
    error: ErrorInfo


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]
    replica_id: str


class Me(BaseModel):
    user_id: str


class SessionRef(BaseModel):
    session_id: str


class Sessions(BaseModel):
    sessions: list[SessionRef]
    next_cursor: str | None = None


class SessionSummary(BaseModel):
    session_id: str
    messages: int
    summary: str | None = None
    sections: list[str]
    turn_id: str | None = None
    pending: int
    current: TaskView | None = None
    last_seq: int


class SessionState(BaseModel):
    session_id: str
    sections: dict[str, Any]


class Cleared(BaseModel):
    cleared: bool


class Interaction(BaseModel):
    tool_use_id: str
    tool: str
    kind: str
    prompt: str = ""
    input: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


class Interactions(BaseModel):
    interactions: list[Interaction]
