from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import fsspec
import pytest
from hookagent_workspace import FsWorkspace, Limits, open_backend
from hookagent_workspace.backend import Backend


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def memory_url() -> str:
    return f"memory://hkw-test-{uuid.uuid4().hex}"


@pytest.fixture(params=["local", "memory"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_backend(backend_kind: str, tmp_path: Path) -> Iterator[Callable[[], Backend]]:
    """A fresh, empty base directory of the parametrised kind (local disk or memory://)."""
    made: list[str] = []

    def make() -> Backend:
        if backend_kind == "local":
            base = tmp_path / f"ws-{len(made)}"
            made.append(str(base))
            return open_backend(str(base))
        url = memory_url()
        made.append(url)
        return open_backend(url)

    yield make
    mem = fsspec.filesystem("memory")
    for url in made:
        if url.startswith("memory://") and mem.exists(url):
            mem.rm(url, recursive=True)


@pytest.fixture
def ws(make_backend: Callable[[], Backend]) -> FsWorkspace:
    return FsWorkspace(make_backend(), (), Limits(max_file_bytes=4096))
