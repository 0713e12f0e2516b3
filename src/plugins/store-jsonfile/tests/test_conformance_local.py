from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hookagent.testing import StoreConformance
from hookagent_store_jsonfile import LocalJsonFileStore


class TestLocalJsonFileStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[LocalJsonFileStore]:
        store = LocalJsonFileStore(tmp_path / "root")
        yield store
        await store.aclose()
