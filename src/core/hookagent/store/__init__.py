"""State stores: the contract, id rules, the in-memory store and URL binding."""

from .base import (
    AGENT_STATE_KEY,
    UNCONDITIONAL,
    AgentStateStore,
    ConflictPolicy,
    ExpectedVersion,
    Fence,
    SessionPage,
    Versioned,
)
from .ids import (
    MAX_ID_LENGTH,
    MAX_PAGE_LIMIT,
    check_cursor,
    check_expected_version,
    check_fence,
    check_id,
    check_owner,
    check_page_limit,
    check_slot,
    decode_id,
    encode_id,
)
from .memory import InMemoryAgentStateStore

__all__ = [
    "AGENT_STATE_KEY",
    "MAX_ID_LENGTH",
    "MAX_PAGE_LIMIT",
    "UNCONDITIONAL",
    "AgentStateStore",
    "ConflictPolicy",
    "ExpectedVersion",
    "Fence",
    "InMemoryAgentStateStore",
    "SessionPage",
    "Versioned",
    "check_cursor",
    "check_expected_version",
    "check_fence",
    "check_id",
    "check_owner",
    "check_page_limit",
    "check_slot",
    "decode_id",
    "encode_id",
]
