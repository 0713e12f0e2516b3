"""The plugin's hooks, URL forms and options, and an agent continuing a conversation on disk."""

from __future__ import annotations

import errno
import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fsspec.implementations.memory import MemoryFileSystem
from hookagent import AgentConfig, RuntimeContext
from hookagent.errors import CorruptState, InvalidIdentifier, StoreConfigurationError
from hookagent.plugins import create_plugin_manager
from hookagent.registry import collect
from hookagent.state import AgentState
from hookagent.testing.scripted import ScriptedModel
from hookagent_store_jsonfile import (
    FsspecJsonFileStore,
    LocalJsonFileStore,
    open_store,
    plugin,
    state_home,
)
from hookagent_store_jsonfile.layout import id_parts

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_default_store_under_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pm = create_plugin_manager([plugin], autoload=False)
    monkeypatch.setenv("HOOKAGENT_STATE_HOME", str(tmp_path / "home"))
    store = pm.hook.hookagent_default_state_store(agent_id="support bot/../v2")
    assert isinstance(store, LocalJsonFileStore)
    assert store.root == tmp_path / "home" / id_parts("support bot/../v2")[0]
    assert not (tmp_path / "home").exists()  # nothing is created before first use
    monkeypatch.delenv("HOOKAGENT_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    store = pm.hook.hookagent_default_state_store(agent_id="a")
    assert store.root == tmp_path / "user" / ".hookagent" / "state" / "a"
    with pytest.raises(InvalidIdentifier):
        pm.hook.hookagent_default_state_store(agent_id="bad\x00id")


def test_registered_schemes_and_url_forms(tmp_path: Path) -> None:
    pm = create_plugin_manager([plugin], autoload=False)
    factories = {
        name: f for name, (f, _) in collect(pm, "hookagent_register_state_stores", "scheme").items()
    }
    assert {"file", "jsonfile", "memory", "s3", "gs", "gcs"} <= set(factories)
    opening = factories["file"](f"file://{tmp_path}/a%20b")  # awaited by the kernel
    assert isinstance(opening, plugin.Opening)
    local = opening.store
    assert isinstance(local, LocalJsonFileStore) and local.root == tmp_path / "a b"
    assert (
        factories["file"](str(tmp_path / "plain")).store.root == tmp_path / "plain"
    )  # kernel: no scheme
    assert open_store(f"jsonfile://{tmp_path}/j?sweep_after=5&cache_slots=3").root == tmp_path / "j"
    assert open_store("jsonfile://~/x").root == Path("~/x").expanduser()
    single = open_store(f"file://{tmp_path}/s", writers="single")
    assert isinstance(single, LocalJsonFileStore) and single.writers == "single"
    mem = factories["memory"]("memory://plugin-test")
    assert isinstance(mem, FsspecJsonFileStore)
    for bad in (
        "file://otherhost/x",
        "file://relative",
        f"file://{tmp_path}?nope=1",
        f"file://{tmp_path}?cache_slots=many",
        f"file://{tmp_path}?writers=all",
        "jsonfile://",
        "",
    ):
        with pytest.raises(StoreConfigurationError):
            open_store(bad)
    multi = open_store("memory://plugin-test-multi?writers=multi")
    assert isinstance(multi, FsspecJsonFileStore) and multi.writers == "multi"
    if importlib.util.find_spec("s3fs") is None:
        with pytest.raises(StoreConfigurationError, match="s3"):
            factories["s3"]("s3://bucket/prefix")


async def test_fsspec_rewrites_after_many_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    from hookagent.messages import Msg
    from hookagent.state import AgentState
    from hookagent_store_jsonfile import remote

    monkeypatch.setattr(remote, "MAX_SEGMENTS", 3)
    store = FsspecJsonFileStore("memory://segments-test")
    try:
        version = 0
        for turn in range(7):
            got = await store.get_versioned("u", "s")
            state = got.state or AgentState("s", "u")
            state.context.append(Msg.user(f"t{turn}"))
            version = await store.save_if_version("u", "s", state, got.version)
        fresh = FsspecJsonFileStore("memory://segments-test")
        got = await fresh.get_versioned("u", "s")
        assert got.version == version == 7
        assert [m.text for m in got.state.context] == [f"t{i}" for i in range(7)]  # type: ignore[union-attr]
        gens = [p for p in store.fs.ls(f"{store.root}/u/s/agent_state", detail=False) if "/g" in p]
        assert len(gens) == 1  # superseded generations are removed
    finally:
        store.fs.rm(store.root, recursive=True)


async def test_agent_continues_a_conversation_from_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKAGENT_STATE_HOME", str(tmp_path))
    ctx = RuntimeContext(user_id="alice", session_id="chat/1")

    def config(model: ScriptedModel) -> AgentConfig:
        # no state_store: the plugin's default store (under HOOKAGENT_STATE_HOME) is used
        return AgentConfig(name="e2e", model=model, plugins=[plugin], autoload_plugins=False)

    first = config(ScriptedModel(["hello alice"]))
    async with first.build() as agent:
        await agent.call("hi, I am alice", ctx)
    await first.aclose()
    second_model = ScriptedModel(["you are alice"])
    second = config(second_model)
    async with second.build() as agent:
        await agent.call("who am I?", RuntimeContext(user_id="alice", session_id="chat/1"))
    await second.aclose()
    seen = [m.text for m in second_model.requests[0].messages]
    assert "hi, I am alice" in seen and "hello alice" in seen
    store = LocalJsonFileStore(tmp_path / "e2e")
    got = await store.get_versioned("alice", "chat/1")
    assert got.version == 2 and got.state is not None
    assert [m.text for m in got.state.context][-2:] == ["who am I?", "you are alice"]
    assert (await store.list_session_ids("alice")).session_ids == ("chat/1",)


class OverwritingMemoryFS(MemoryFileSystem):
    """A backend without conditional writes: an exclusive create silently overwrites."""

    protocol = "overwriting-memory"

    def _open(self, path: str, mode: str = "rb", **kwargs: object) -> object:
        return super()._open(path, "wb" if mode == "xb" else mode, **kwargs)


class NoExclusiveMemoryFS(MemoryFileSystem):
    """A backend that rejects exclusive create."""

    protocol = "noexclusive-memory"

    def _open(self, path: str, mode: str = "rb", **kwargs: object) -> object:
        if mode == "xb":
            raise NotImplementedError("mode 'xb'")
        return super()._open(path, mode, **kwargs)


@pytest.mark.parametrize(
    ("fs_class", "why"),
    [
        (OverwritingMemoryFS, "second exclusive create succeeded"),
        (NoExclusiveMemoryFS, "not supported"),
    ],
)
def test_multi_writer_refused_without_conditional_writes(fs_class: type, why: str) -> None:
    fs = fs_class()
    with pytest.raises(StoreConfigurationError, match=why):
        FsspecJsonFileStore("/cas-probe-test", writers="multi", fs=fs)
    single = FsspecJsonFileStore("/cas-probe-test", writers="single", fs=fs)  # allowed
    assert single.writers == "single"
    assert not fs.ls("/cas-probe-test", detail=False) if fs.exists("/cas-probe-test") else True


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("sweep_after", "600"),
        ("sweep_after", float("nan")),
        ("sweep_after", -float("inf")),
        ("sweep_after", -1),
        ("sweep_after", True),
        ("cache_slots", "3"),
        ("cache_slots", 1.5),
        ("cache_slots", -1),
        ("cache_slots", True),
        ("writers", "all"),
        ("writers", ["multi"]),
        ("seen_slots", -1),
        ("seen_slots", 1.0),
        ("seen_slots", "10"),
        ("seen_slots", False),
    ],
)
def test_bad_options_are_refused_when_the_store_is_made(
    tmp_path: Path, option: str, value: object
) -> None:
    """Not later, inside a save (a str ``sweep_after`` used to raise a bare TypeError there)."""
    with pytest.raises(StoreConfigurationError, match=option):
        LocalJsonFileStore(tmp_path / "r", **{option: value})  # type: ignore[arg-type]
    with pytest.raises(StoreConfigurationError, match=option):
        open_store(str(tmp_path / "r"), **{option: value})
    with pytest.raises(StoreConfigurationError, match=option):
        AgentConfig(name="a", model="demo", state_store=str(tmp_path / "r"),
                    state_store_options={option: value}).build()  # fmt: skip
    if option not in ("sweep_after", "seen_slots"):
        with pytest.raises(StoreConfigurationError, match=option):
            FsspecJsonFileStore("memory://bad-options", **{option: value})  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "query", ["sweep_after=nan", "sweep_after=-1", "sweep_after=-inf", "sweep_after=never"]
)
def test_bad_query_options_are_refused(tmp_path: Path, query: str) -> None:
    with pytest.raises(StoreConfigurationError, match="sweep_after"):
        open_store(f"file://{tmp_path}/r?{query}")


async def test_good_options_are_kept(tmp_path: Path) -> None:
    assert LocalJsonFileStore(tmp_path, sweep_after=0)._core.sweep_after == 0.0
    assert LocalJsonFileStore(tmp_path, sweep_after=None)._core.sweep_after is None
    assert open_store(f"file://{tmp_path}?sweep_after=1.5")._core.sweep_after == 1.5  # type: ignore[union-attr]
    assert LocalJsonFileStore(tmp_path)._core.seen._slots == 8192
    assert LocalJsonFileStore(tmp_path, seen_slots=0)._core.seen._slots == 0
    assert open_store(f"file://{tmp_path}?seen_slots=7")._core.seen._slots == 7  # type: ignore[union-attr]
    assert open_store(str(tmp_path), seen_slots=8)._core.seen._slots == 8  # type: ignore[union-attr]
    for bad in ("seen_slots=-1", "seen_slots=x"):
        with pytest.raises(StoreConfigurationError, match="seen_slots"):
            open_store(f"file://{tmp_path}?{bad}")
    with pytest.raises(StoreConfigurationError, match="seen_slots"):
        open_store("memory://x?seen_slots=5")  # the fsspec stores have no such memory


@pytest.mark.parametrize(
    "make",
    [
        lambda root: LocalJsonFileStore(root, sweep_after=float("inf")),
        lambda root: open_store(str(root), sweep_after=float("inf")),
        lambda root: open_store(f"file://{root}?sweep_after=inf"),
        lambda root: open_store(f"file://{root}?sweep_after=none"),
        lambda root: open_store(f"jsonfile://{root}?sweep_after=None"),
    ],
)
async def test_an_infinite_or_none_sweep_after_means_never(tmp_path: Path, make: Any) -> None:
    """``inf`` meant "never" before the options were checked (877bb16 refused it)."""
    store = make(tmp_path / "r")
    assert store._core.sweep_after is None
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 0) == 1


@pytest.mark.parametrize(
    "url", ["file:///tmp/a%00b", "jsonfile:///tmp/a%00b", "/tmp/a\x00b", "/tmp/\x00"]
)
def test_a_root_with_nul_is_refused_when_the_store_is_made(url: str) -> None:
    with pytest.raises(StoreConfigurationError, match="NUL"):
        open_store(url)


def test_bad_roots_and_storage_options_are_refused() -> None:
    for root in ("", 5, None, b"/tmp/x"):
        with pytest.raises(StoreConfigurationError):
            LocalJsonFileStore(root)  # type: ignore[arg-type]
    with pytest.raises(StoreConfigurationError, match="storage_options"):
        open_store("memory://x", storage_options="abc")
    with pytest.raises(StoreConfigurationError, match="storage_options"):
        FsspecJsonFileStore("memory://x", storage_options=["anon"])  # type: ignore[arg-type]


def test_a_relative_root_is_made_absolute_when_the_store_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = LocalJsonFileStore("rel/dir")
    monkeypatch.chdir("/")
    assert store.root == tmp_path / "rel" / "dir"


async def test_missing_parents_of_the_root_are_created_0700_and_existing_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~/.hookagent/state/<agent>``: the store makes ``.hookagent`` and ``state`` private too
    (not 0755 from the umask), and never chmods a directory it did not create."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HOOKAGENT_STATE_HOME", raising=False)
    (tmp_path / "home").mkdir(mode=0o755)
    os.chmod(tmp_path / "home", 0o755)
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real(fd))[1])
    old = os.umask(0o022)
    try:
        store = plugin.hookagent_default_state_store(agent_id="a")
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    finally:
        os.umask(old)
    for made in (".hookagent", ".hookagent/state", ".hookagent/state/a"):
        assert stat.S_IMODE((tmp_path / "home" / made).stat().st_mode) == 0o700, made
        # the new entry is durable: its parent was fsynced
        assert (tmp_path / "home" / made).parent.stat().st_ino in synced, made
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o755  # existed: left as is
    assert (await store.get_versioned("u", "s")).version == 1


def test_a_relative_state_home_is_made_absolute_when_the_store_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOOKAGENT_STATE_HOME", "relative/dir")
    store = plugin.hookagent_default_state_store(agent_id="a")
    monkeypatch.chdir("/")
    assert store.root == tmp_path / "relative" / "dir" / "a"
    assert state_home().is_absolute()


_GONE_CWD = """
import asyncio, os, sys
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore

os.chdir(sys.argv[1])
os.rmdir(sys.argv[1])  # a daemon whose release directory was removed by a redeploy

async def main() -> None:
    for root in sys.argv[2:]:  # absolute: parents missing, then a root that exists
        store = LocalJsonFileStore(root)
        version = await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        print(version, (await LocalJsonFileStore(root).get_versioned("u", "s")).version)

asyncio.run(main())
"""


def test_an_absolute_root_works_when_the_working_directory_was_removed(tmp_path: Path) -> None:
    """``make_root`` never asks for the cwd of an absolute root (it used to: ``[Errno 2]``)."""
    gone = tmp_path / "release"
    gone.mkdir()
    (tmp_path / "exists").mkdir()
    roots = [str(tmp_path / "state" / "agent"), str(tmp_path / "exists")]
    out = subprocess.run(
        [sys.executable, "-c", _GONE_CWD, str(gone), *roots],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1", "1", "1"]
    assert not gone.exists()


async def test_a_parent_that_cannot_be_read_gets_no_fsync_and_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent that is ``-wx`` to this process cannot be opened to fsync the new entry in it:
    the fsync is skipped (it used to raise StoreUnavailable on the first call only, and the
    next call, finding the directory made, went through). Tests run as root, which bypasses
    permissions, so the refused open is simulated."""
    locked = tmp_path / "wx"
    locked.mkdir()
    real = os.open

    def refusing(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == str(locked) and kwargs.get("dir_fd") is None:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, *args, **kwargs)

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real_fsync(fd))[1]
    )
    monkeypatch.setattr(os, "open", refusing)
    store = LocalJsonFileStore(locked / "a" / "root")
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 0) == 1
    monkeypatch.setattr(os, "open", real)
    assert (locked / "a" / "root").is_dir()
    assert locked.stat().st_ino not in synced  # skipped: it could not be opened
    assert (locked / "a").stat().st_ino in synced  # the other new entry's parent: fsynced
    assert (await LocalJsonFileStore(locked / "a" / "root").get_versioned("u", "s")).version == 1


async def test_bad_method_arguments_raise_the_documented_errors(tmp_path: Path) -> None:
    """As docs/stores/jsonfile.md lists them: a cursor str that breaks an id's rules is
    InvalidIdentifier, every other bad argument InvalidStoreArgument; nothing is created."""
    from hookagent.errors import InvalidStoreArgument
    from hookagent.store.base import Fence

    store = LocalJsonFileStore(tmp_path / "r")
    for cursor in ("x" * 257, "a\x00b", "\ud800"):
        with pytest.raises(InvalidIdentifier, match="cursor"):
            await store.list_session_ids("u", cursor=cursor)
    for limit, cursor in ((5, 5), (0, None), (10_001, None), (True, None), (1.0, None)):
        with pytest.raises(InvalidStoreArgument):
            await store.list_session_ids("u", limit=limit, cursor=cursor)  # type: ignore[arg-type]
    state = AgentState("s", "u")
    for expected, fence in (
        (-1, None),
        ("1", None),
        (0, Fence(2**53, "o")),
        (0, Fence(1, "o" * 257)),
    ):
        with pytest.raises(InvalidStoreArgument):
            await store.save_if_version("u", "s", state, expected, fence=fence)  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists()
    assert (await store.list_session_ids("u", cursor="")).session_ids == ()


async def test_a_store_url_is_opened_when_the_kernel_first_needs_it(tmp_path: Path) -> None:
    """The factory's result is awaited by the kernel: the root is open and a worker of each
    pool is running before the first call, which then pays for neither."""
    from hookagent_store_jsonfile import local

    root = tmp_path / "a" / "b"
    config = AgentConfig(
        name="opened", model=ScriptedModel(["hi"]), state_store=f"file://{root}",
        plugins=[plugin], autoload_plugins=False,
    )  # fmt: skip
    assert not root.exists()  # nothing on disk while the configuration is only made
    store = await config.kernel.store()
    assert isinstance(store, LocalJsonFileStore)
    assert root.is_dir() and store._core.local_disk
    for kind in ("ops", "disk"):
        pid, pool = local._POOLS[kind]
        assert pid == os.getpid() and pool._threads, kind  # a worker already started
    async with config.build() as agent:
        await agent.call("hello", RuntimeContext(user_id="u", session_id="s"))
    got = await store.get_versioned("u", "s")
    assert got.state is not None and len(got.state.context) == 2
    await config.aclose()


async def test_an_open_that_fails_leaves_the_error_to_the_first_operation(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    store = open_store(f"file://{blocker}/root")
    assert isinstance(store, LocalJsonFileStore)
    assert await store.open() is store  # no error here: the disk may be mounted later
    with pytest.raises(CorruptState, match="opening the store root"):
        await store.get_versioned("u", "s")
