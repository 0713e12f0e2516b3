"""The session log's registration and URL rules (the state store's), and its argument errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem
from hookagent.errors import InvalidIdentifier, InvalidStoreArgument, StoreConfigurationError
from hookagent.plugins import create_plugin_manager
from hookagent.sessionlog import (
    InMemorySessionLog,
    LogEvent,
    LogWriter,
    SessionLog,
    collect_session_logs,
    open_session_log,
)
from hookagent_store_jsonfile import FsspecJsonFileSessionLog, JsonFileSessionLog, plugin
from hookagent_store_jsonfile.remote import UnverifiedConditionalWrites
from hookagent_store_jsonfile.sessionlog import open_session_log as plugin_open

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_registered_schemes_and_localities() -> None:
    pm = create_plugin_manager([plugin], autoload=False)
    found = collect_session_logs(pm)
    assert "memory" not in found  # the session-log plugin's
    assert {k: v[2] for k, v in found.items()} == {
        "file": "host",
        "jsonfile": "host",
        **{s: "shared" for s in ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")},
    }


async def test_url_forms_open_the_local_log(tmp_path: Path) -> None:
    pm = create_plugin_manager([plugin], autoload=False)
    for url in (f"file://{tmp_path}/a", f"jsonfile://{tmp_path}/a", f"{tmp_path}/a"):
        log = await open_session_log(url, plugin_manager=pm)
        assert isinstance(log, JsonFileSessionLog) and isinstance(log, SessionLog)
        assert log.root == tmp_path / "a" and log.locality == "host"
        await log.aclose()
    w = await open_session_log(
        f"file://{tmp_path}/a?writers=single&cache_slots=0", plugin_manager=pm
    )
    assert isinstance(w, JsonFileSessionLog) and w.writers == "single"
    writer = await w.acquire("u", "s", "o", 10)
    await w.commit(writer, "b", 0, [LogEvent("message/appended")])
    other = await open_session_log(f"{tmp_path}/a", plugin_manager=pm)
    assert (await other.head("u", "s")).seq == 1


@pytest.mark.parametrize(
    ("url", "options", "match"),
    [
        ("file://host/abs", {}, "local absolute path"),
        ("file://./relative", {}, "local absolute path"),
        ("file:///a?sweep_after=3", {}, "unknown session log options"),
        ("file:///a?nope=1", {}, "unknown option"),
        ("file:///a?cache_slots=x", {}, "not a int"),
        ("file:///a", {"writers": "all"}, "writers must be"),
        ("file:///a", {"cache_slots": -1}, "cache_slots must be"),
        ("file:///a", {"storage_options": {}}, "unknown session log options"),
        ("s3://bucket/p", {"sweep_after": 1}, "unknown session log options"),
        ("memory://x", {}, "serves no 'memory' session log"),
        ("", {}, "non-empty"),
    ],
)
def test_bad_urls_and_options_are_refused(url: str, options: dict[str, object], match: str) -> None:
    with pytest.raises(StoreConfigurationError, match=match):
        plugin_open(url, **options)


def test_a_root_with_nul_is_refused() -> None:
    with pytest.raises(StoreConfigurationError, match="NUL"):
        plugin_open("file:///a%00b")


class OverwritingMemoryFS(MemoryFileSystem):
    protocol = "overwriting-memory"

    def _open(self, path: str, mode: str = "rb", **kwargs: object) -> object:
        return super()._open(path, "wb" if mode == "xb" else mode, **kwargs)


def test_multi_writer_needs_conditional_writes_and_warns_where_unverified() -> None:
    with pytest.raises(StoreConfigurationError, match="second exclusive create succeeded"):
        FsspecJsonFileSessionLog("/probe", writers="multi", fs=OverwritingMemoryFS())
    with pytest.warns(UnverifiedConditionalWrites):
        FsspecJsonFileSessionLog("/probe", writers="multi", fs=_Unverified())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FsspecJsonFileSessionLog("memory://probe", writers="multi")
        FsspecJsonFileSessionLog("/probe", writers="single", fs=OverwritingMemoryFS())


class _Unverified(MemoryFileSystem):
    protocol = "unverified-memory"


def test_the_local_fsspec_filesystem_is_refused_without_fs(tmp_path: Path) -> None:
    with pytest.raises(StoreConfigurationError, match="JsonFileSessionLog"):
        FsspecJsonFileSessionLog(f"local://{tmp_path}")


@pytest.mark.parametrize("make", ["local", "memory"])
async def test_bad_arguments_raise_the_reference_errors(make: str, tmp_path: Path) -> None:
    """The same error types as ``InMemorySessionLog``, before anything is touched."""
    ref = InMemorySessionLog()
    log = (
        JsonFileSessionLog(tmp_path)
        if make == "local"
        else FsspecJsonFileSessionLog("memory://args")
    )
    w = await ref.acquire("u", "s", "o", 10)
    bad_writer = LogWriter("u", "s", "o", 0, 0.0)
    calls = [
        (lambda x: x.head("u", "\x00"), InvalidIdentifier),
        (lambda x: x.acquire("u", "s", "", 10), InvalidStoreArgument),
        (lambda x: x.acquire("u", "s", "o", 0), InvalidStoreArgument),
        (lambda x: x.acquire("u", "s", "o", float("nan")), InvalidStoreArgument),
        (lambda x: x.renew(bad_writer, 10), InvalidStoreArgument),
        (lambda x: x.commit(w, "", 0, [LogEvent("a/b")]), InvalidStoreArgument),
        (lambda x: x.commit(w, "b", 0, []), Exception),
        (lambda x: x.commit(w, "b", 0, [LogEvent("nope")]), Exception),
        (lambda x: x.read_after("u", "s", -1), InvalidStoreArgument),
        (lambda x: x.read_after("u", "s", 0, 0), InvalidStoreArgument),
        (lambda x: x.list_session_ids("u", limit=0), Exception),
        (lambda x: x.is_sealed("u", "s", "\x00"), InvalidStoreArgument),
    ]
    for call, kind in calls:
        with pytest.raises(kind) as a:
            await call(ref)
        with pytest.raises(kind) as b:
            await call(log)
        assert type(a.value) is type(b.value), (a.value, b.value)
    assert not (tmp_path / ".sessionlog").exists() or make != "local"
    await log.aclose()


@pytest.mark.parametrize("size", [700, 1023, 1024, 1500])
async def test_fsspec_reads_across_commit_buckets(size: int) -> None:
    """Commit objects are bucketed by first seq (1,024 a bucket): a read that starts inside
    a commit begun in an earlier bucket, with later commits in its own, reads each once."""
    log = FsspecJsonFileSessionLog(f"memory://buckets-{size}")
    w = await log.acquire("u", "s", "o", 60)
    seq = 0
    for n in range(4):
        r = await log.commit(
            w, f"b{n}", seq, [LogEvent("a/b", {"n": n, "i": i}) for i in range(size)]
        )
        seq = r.last_seq
    for after in (0, 1, size - 1, size, 1023, 1024, 1025, 2 * size + 5, seq - 1):
        got = await log.read_after("u", "s", after)
        assert [e.seq for e in got] == list(range(after + 1, seq + 1)), after
        assert [e.seq for e in await log.read_after("u", "s", after, 2)] == [after + 1, after + 2][
            : seq - after
        ]
    await log.delete("u", "s")
