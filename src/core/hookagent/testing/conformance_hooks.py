"""The optional hooks a store's conformance class gives, so that more checks can run.

Each hook defaults to "not available"; a check that needs one is then *skipped with a reason
that starts with "not run:"* (``pytest -rs`` lists them), never passed silently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson

from ..store.base import AgentStateStore

NOT_RUN_HANDLE = "not run: define open_handle() to give a second handle on the same backend"
NOT_RUN_PLANT = "not run: define plant_state() to write raw slot bytes behind the store's back"


def split_document(document: bytes) -> tuple[bytes, list[bytes]]:
    """A state document (``AgentState.to_json()``'s form) as the head and the messages a
    store keeps apart: the head holds every key but ``context``, in the document's order."""
    doc = orjson.loads(document)
    messages = [orjson.dumps(m) for m in doc.pop("context")]
    return orjson.dumps(doc), messages


class StoreHooks:
    """Override these in your ``StoreConformance`` subclass (see docs/testing-plugins.md)."""

    async def open_handle(self, store: AgentStateStore) -> AgentStateStore | None:
        """Another handle on ``store``'s backend: a new instance, connection and cache, as a
        second process would have. None (the default): the cross-handle checks are not run.
        The suite closes every handle it opens."""
        return None

    async def plant_state(
        self,
        store: AgentStateStore,
        user_id: str,
        session_id: str,
        key: str,
        document: bytes,
        version: int,
    ) -> None:
        """Write ``document`` (a whole state, ``to_json()``'s form; ``split_document`` gives
        head and messages) as the slot's stored content at ``version``, in your raw layout
        and behind the store's back, as bytes copied from another slot or written by a newer
        hookagent would be. Raise ``NotImplementedError`` (the default): not run."""
        raise NotImplementedError

    @asynccontextmanager
    async def handles(self, store: AgentStateStore, count: int) -> AsyncIterator[list[Any]]:
        """``count`` more handles on ``store``'s backend, closed on exit; skips the test
        ("not run") when ``open_handle`` gives none."""
        import pytest

        opened: list[AgentStateStore] = []
        try:
            for _ in range(count):
                handle = await self.open_handle(store)
                if handle is None:
                    pytest.skip(NOT_RUN_HANDLE)
                opened.append(handle)
            yield opened
        finally:
            for handle in opened:
                await handle.aclose()

    async def plant(
        self,
        store: AgentStateStore,
        user_id: str,
        session_id: str,
        key: str,
        document: bytes,
        version: int,
    ) -> None:
        """``plant_state``, or skip the test ("not run") when it is not defined."""
        import pytest

        try:
            await self.plant_state(store, user_id, session_id, key, document, version)
        except NotImplementedError:
            pytest.skip(NOT_RUN_PLANT)
