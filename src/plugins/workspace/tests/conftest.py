from __future__ import annotations

import logging
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import fsspec
import pytest

with warnings.catch_warnings():  # pyftpdlib still imports asyncore/asynchat on 3.11
    warnings.simplefilter("ignore", DeprecationWarning)
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler
    from pyftpdlib.servers import ThreadedFTPServer
from hookagent_workspace import FsWorkspace, Limits, open_backend
from hookagent_workspace.backend import Backend


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def memory_url() -> str:
    return f"memory://hkw-test-{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def ftp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real remote filesystem: an FTP server on loopback (fsspec's own ``ftp://``)."""
    logging.getLogger("pyftpdlib").setLevel(logging.WARNING)
    root = tmp_path_factory.mktemp("ftp-root")
    auth = DummyAuthorizer()
    auth.add_user("hk", "secret-pw", str(root), perm="elradfmwMT")
    handler = type("Handler", (FTPHandler,), {"authorizer": auth})
    server = ThreadedFTPServer(("127.0.0.1", 0), handler)
    port = server.socket.getsockname()[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"timeout": 0.05}, daemon=True)
    thread.start()
    yield f"ftp://hk:secret-pw@127.0.0.1:{port}"
    server.close_all()
    thread.join(5)


@pytest.fixture(params=["local", "memory", "ftp"])
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
