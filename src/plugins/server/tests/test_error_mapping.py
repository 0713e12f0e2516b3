"""Every library error a route can meet has its status and typed body (never a 500)."""

from __future__ import annotations

import json

from hookagent import LeaseHeld, StoreUnavailable, ToolUseBlock, VersionConflict
from hookagent_server.errors import from_exception
from hookagent_session_log import AdminRefused, UncertainToolCalls


def test_session_log_refusals_are_conflicts_with_a_typed_body() -> None:
    uncertain = UncertainToolCalls("u", "s", [ToolUseBlock("t-1", "pay", {})])
    cases = [
        (uncertain, 409, "UncertainToolCalls"),
        (AdminRefused("pending"), 409, "AdminRefused"),
        (VersionConflict("u", "s", "agent_state", 3, 4), 409, "VersionConflict"),
        (LeaseHeld("held"), 409, "SessionBusy"),
        (StoreUnavailable("down"), 503, "StoreUnavailable"),
    ]
    for exc, status, kind in cases:
        response = from_exception(exc)
        assert response is not None and response.status_code == status, kind
        error = json.loads(bytes(response.body))["error"]
        assert error["type"] == kind and error["status"] == status
    body = json.loads(bytes(from_exception(uncertain).body))  # type: ignore[union-attr]
    assert body["error"]["detail"] == {"uncertain": [{"id": "t-1", "name": "pay"}]}
