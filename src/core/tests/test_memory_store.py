from __future__ import annotations

import pytest
from hookagent.store import InMemoryAgentStateStore
from hookagent.testing import StoreConformance


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self) -> InMemoryAgentStateStore:
        return InMemoryAgentStateStore()
