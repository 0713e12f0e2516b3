"""Issue 13 on the JSON-file store (local disk, fsspec single- and multi-writer): a state is
bound to its slot, a newer schema is never overwritten, one fence rule on every save form, a
head missing over its history fails closed, and every error names the slot."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hookagent.errors import (
    CorruptState,
    Fenced,
    StateSlotMismatch,
    StoreUnavailable,
    UnsupportedSchemaVersion,
)
from hookagent.messages import Msg
from hookagent.state import AgentState, History
from hookagent.store.base import UNCONDITIONAL, Fence
from hookagent.store.ids import slot_name
from hookagent_store_jsonfile import FsspecJsonFileStore, LocalJsonFileStore
from hookagent_store_jsonfile.layout import id_parts, slot_parts
from hookagent_store_jsonfile.records import (
    MAGIC3,
    decode_head_bytes,
    decode_head_file,
    encode_first_file,
    encode_head_file,
)
from hookagent_store_jsonfile.remotecas import decode_cas_head, encode_cas_head

pytestmark = pytest.mark.anyio
Store = LocalJsonFileStore | FsspecJsonFileStore
KINDS = ["local", "memory", "memory-multi", "fsspec-local-multi"]


class Backend:
    """A store and raw access to the objects it keeps (to plant what an adversary would)."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.fs: Any = fsspec.filesystem("memory" if kind.startswith("memory") else "file")
        self.store: Store
        if kind == "local":
            self.store = LocalJsonFileStore(tmp_path / "root")
            self.root = str(tmp_path / "root")
        elif kind.startswith("memory"):
            url = f"memory://hookagent-guards-{uuid.uuid4().hex}"
            writers = "multi" if kind.endswith("multi") else "single"
            self.store = FsspecJsonFileStore(url, writers=writers)
            self.root = self.store.root
        else:
            self.root = str(tmp_path / "root")
            self.store = FsspecJsonFileStore(self.root, writers="multi", fs=self.fs)

    def key_path(self, user: str, session: str, key: str = "agent_state") -> str:
        return "/".join([self.root, *slot_parts(user, session), *id_parts(key)])

    def session_path(self, user: str, session: str) -> str:
        return "/".join([self.root, *slot_parts(user, session)])

    def newest_head(self, user: str, session: str) -> str:
        kpath = self.key_path(user, session)
        if not self.kind.endswith("multi"):
            return f"{kpath}/head"
        heads = sorted(p for p in self.fs.find(kpath) if p.rsplit("/", 1)[-1].startswith("v"))
        return str(heads[-1])

    def rewrite_head_state(self, user: str, session: str, edit: Callable[[bytes], bytes]) -> None:
        path = self.newest_head(user, session)
        data = self.fs.cat_file(path)
        if self.kind.endswith("multi"):
            meta, state = decode_cas_head(data, "test")
            self.fs.pipe_file(path, encode_cas_head(meta, edit(state)))
        elif data.startswith(MAGIC3):  # a first save's: the record file follows the head
            head = decode_head_bytes(data, "test")
            base, later = data[head.start : head.size], data[head.size :]
            self.fs.pipe_file(
                path,
                encode_first_file(head.version, head.gen, head.count, base, edit(head.state))
                + later,
            )
            hint = f"{path[: -len('head')]}.end"
            if self.fs.exists(hint):
                self.fs.rm_file(hint)  # (its offsets moved: no hint)
        else:
            head = decode_head_file(data, "test")
            new = type(head)(
                head.version, head.gen, head.count, head.size, edit(head.state), head.tail
            )
            self.fs.pipe_file(path, encode_head_file(new))

    def snapshot(self) -> dict[str, bytes]:
        return {p: self.fs.cat_file(p) for p in self.fs.find(self.root)}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=KINDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    b = Backend(request.param, tmp_path)
    yield b
    await b.store.aclose()
    if b.kind.startswith("memory") and b.fs.exists(b.root):
        b.fs.rm(b.root, recursive=True)


def _state(user: str, session: str, *texts: str) -> AgentState:
    state = AgentState(session, user)
    state.context.extend(Msg.user(t) for t in texts)
    return state


async def test_a_state_naming_another_slot_is_refused_before_any_write(backend: Backend) -> None:
    store = backend.store
    await store.save_if_version("alice", "x", _state("alice", "x", "mine"), 0)
    before = backend.snapshot()
    for expected in (1, UNCONDITIONAL):
        with pytest.raises(StateSlotMismatch, match=r"user_id='alice' session_id='x'"):
            await store.save_if_version("alice", "x", _state("bob", "s", "theirs"), expected)
        with pytest.raises(StateSlotMismatch):
            await store.save_if_version("alice", "x", _state("alice", "y"), expected)
    with pytest.raises(StateSlotMismatch):
        await store.save_if_version("carol", "z", _state("bob", "z"), 0)
    assert backend.snapshot() == before  # nothing written, not even carol's directories
    got = await store.get_versioned("alice", "x")
    assert got.version == 1 and got.state is not None and got.state.user_id == "alice"


async def test_a_loaded_state_naming_another_slot_is_corrupt(backend: Backend) -> None:
    """Bytes copied from alice's slot into bob's (an import done by hand) are not bob's."""
    await backend.store.save_if_version("alice", "x", _state("alice", "x", "hello"), 0)
    backend.fs.copy(
        backend.session_path("alice", "x"), backend.session_path("bob", "x"), recursive=True
    )
    with pytest.raises(CorruptState, match=slot_name("bob", "x") + ".*user_id='alice'"):
        await backend.store.get_versioned("bob", "x")


async def test_a_newer_schema_is_never_overwritten(backend: Backend) -> None:
    store = backend.store
    await store.save_if_version("u", "s", _state("u", "s", "one"), 0)
    backend.rewrite_head_state(
        "u", "s", lambda b: b.replace(b'"schema_version":1', b'"schema_version":99')
    )
    before = backend.snapshot()
    mine = _state("u", "s", "two")
    for expected in (1, UNCONDITIONAL):
        with pytest.raises(UnsupportedSchemaVersion, match=slot_name("u", "s")):
            await store.save_if_version("u", "s", mine, expected)
        with pytest.raises(UnsupportedSchemaVersion):  # also when the fence is newer
            await store.save_if_version("u", "s", mine, expected, fence=Fence(9, "o"))
    assert backend.snapshot() == before


async def test_a_newer_schema_after_an_extension_section_is_found(backend: Backend) -> None:
    """The stored head's schema_version is read however the head ends."""
    store = backend.store
    state = _state("u", "s", "one")
    state.extensions["zz_plugin"] = {"schema_version": 1}
    await store.save_if_version("u", "s", state, 0)
    backend.rewrite_head_state(
        "u", "s", lambda b: b.replace(b',"schema_version":1,', b',"schema_version":99,')
    )
    with pytest.raises(UnsupportedSchemaVersion):
        await store.save_if_version("u", "s", _state("u", "s", "x"), UNCONDITIONAL)


@pytest.mark.parametrize("form", ["expected", "unconditional"])
async def test_the_one_fence_rule_on_every_save_form(backend: Backend, form: str) -> None:
    """Older epoch, or the same epoch held by another owner: ``Fenced``. A newer epoch is
    accepted and recorded; the same epoch and owner is accepted."""
    store = backend.store
    version = 0

    async def save(fence: Fence) -> None:
        nonlocal version
        expected = UNCONDITIONAL if form == "unconditional" else version
        version = await store.save_if_version(
            "u", "s", _state("u", "s", f"m{version}"), expected, fence=fence
        )

    await save(Fence(0, "a"))  # the first fence is recorded: epoch 0 is then a's
    with pytest.raises(Fenced, match=r"epoch 0 of 'a'.*user_id='u' session_id='s'"):
        await save(Fence(0, "b"))
    await save(Fence(0, "a"))
    await save(Fence(5, "b"))
    for stale in (Fence(4, "b"), Fence(5, "a"), Fence(0, "a")):
        with pytest.raises(Fenced):
            await save(stale)
    await save(Fence(5, "b"))
    await save(Fence(6, "a"))
    with pytest.raises(Fenced):
        await save(Fence(6, "b"))
    assert version == 5
    got = await store.get_versioned("u", "s")
    assert got.version == 5 and got.state is not None
    assert [m.text for m in got.state.context] == ["m4"]


@pytest.mark.parametrize("backend", ["local", "memory"], indirect=True)  # (one head each)
async def test_a_head_missing_over_its_history_fails_closed(backend: Backend) -> None:
    """Not "absent": loads and every save form raise ``CorruptState`` naming the slot, and
    nothing is removed, until the slot is deleted (the repair)."""
    store = backend.store
    await store.save_if_version("u", "s", _state("u", "s", "one"), 0)
    await store.save_if_version("u", "s", _state("u", "s", "two"), UNCONDITIONAL)
    backend.fs.rm_file(f"{backend.key_path('u', 's')}/head")
    fresh: Store = (
        LocalJsonFileStore(backend.root, cache_slots=0)
        if isinstance(store, LocalJsonFileStore)
        else FsspecJsonFileStore(store.url, cache_slots=0)
    )
    before = backend.snapshot()
    for handle in (store, fresh):
        with pytest.raises(CorruptState, match=slot_name("u", "s") + ": the head is missing"):
            await handle.get_versioned("u", "s")
        for expected in (0, 2, UNCONDITIONAL):
            with pytest.raises(CorruptState, match="the head is missing"):
                await handle.save_if_version("u", "s", _state("u", "s", "x"), expected)
        with pytest.raises(CorruptState, match="the head is missing"):
            await handle.save_if_version(
                "u", "s", _state("u", "s", "x"), UNCONDITIONAL, fence=Fence(3, "o")
            )
    if backend.kind == "local":
        with pytest.raises(CorruptState):
            await store.exists("u", "s")
        assert await store.sweep(older_than=0) == 0
        await store.delete("u", "s", "other-key")  # a delete of another key keeps it
    assert backend.snapshot() == before
    assert await store.delete("u", "s") is False  # the repair (no head: nothing was live)
    assert await store.save_if_version("u", "s", _state("u", "s", "new"), 0) == 1
    await fresh.aclose()


async def test_a_first_save_that_dies_before_its_head_is_not_a_lost_head(tmp_path: Path) -> None:
    """fsspec, one writer: the segment is written, the head PUT fails (a kill there leaves
    the same objects): the slot reads as absent, and the next first save cleans up."""
    store = FsspecJsonFileStore(f"memory://hookagent-guards-{uuid.uuid4().hex}")
    fs = store.fs
    real = fs.pipe_file

    def failing(path: str, data: bytes, **kw: Any) -> None:
        if path.endswith("/head"):
            raise OSError("killed")
        real(path, data, **kw)

    fs.pipe_file = failing
    try:
        with pytest.raises(Exception, match="killed"):
            await store.save_if_version("u", "s", _state("u", "s", "lost"), 0)
    finally:
        del fs.pipe_file
    kpath = "/".join([store.root, *slot_parts("u", "s"), *id_parts("agent_state")])
    assert any(p.rsplit("/", 1)[-1].startswith("g") for p in fs.ls(kpath, detail=False))
    assert (await store.get_versioned("u", "s")).version == 0
    assert await store.save_if_version("u", "s", _state("u", "s", "kept"), 0) == 1
    gens = [p for p in fs.ls(kpath, detail=False) if p.rsplit("/", 1)[-1].startswith("g")]
    assert len(gens) == 1 and not fs.exists(f"{kpath}/.open")
    got = await store.get_versioned("u", "s")
    assert got.state is not None and [m.text for m in got.state.context] == ["kept"]
    fs.rm(store.root, recursive=True)


def _second(backend: Backend) -> Store:
    """Another handle on the same backend (its own caches)."""
    store = backend.store
    if isinstance(store, LocalJsonFileStore):
        return LocalJsonFileStore(backend.root)
    if backend.kind == "fsspec-local-multi":
        return FsspecJsonFileStore(backend.root, writers="multi", fs=backend.fs)
    return FsspecJsonFileStore(store.url, writers=store.writers)


async def test_an_edit_saved_at_the_current_version_is_seen_by_every_handle(
    backend: Backend,
) -> None:
    """A history with no committed prefix (as decoded from JSON) is rewritten whole: the
    edit is stored, and a second handle with a warm cache sees it too."""
    store, other = backend.store, _second(backend)
    await store.save_if_version("u", "s", _state("u", "s", "one", "two"), 0)
    warm = await other.get_versioned("u", "s")  # other's cache holds version 1
    assert warm.state is not None
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    edited = AgentState("s", "u")
    edited.context = History([Msg.user("one"), Msg.user("TWO, edited")])  # no committed prefix
    assert edited.context.unchanged_prefix == 0
    assert await store.save_if_version("u", "s", edited, got.version) == 2
    for handle in (store, other, _second(backend)):
        seen = await handle.get_versioned("u", "s")
        assert seen.version == 2 and seen.state is not None
        assert [m.text for m in seen.state.context] == ["one", "TWO, edited"]
    await other.aclose()


@pytest.mark.parametrize("backend", KINDS[1:], indirect=True)  # (local: test_first_save)
async def test_an_os_error_names_the_slot(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(backend.store, FsspecJsonFileStore)
    await backend.store.save_if_version("u", "s", _state("u", "s", "a"), 0)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(backend.store.fs, "cat_file", broken)
    with pytest.raises(StoreUnavailable, match=slot_name("u", "s")):
        await backend.store.get_versioned("u", "s")
    with pytest.raises(StoreUnavailable, match=slot_name("u", "s")):
        await backend.store.save_if_version("u", "s", _state("u", "s", "b"), 1)


async def test_a_stored_head_that_does_not_decode_names_the_slot(backend: Backend) -> None:
    """Bad JSON in a checksummed head: load and every save form fail closed, naming the
    slot; a newer schema's load names it too."""
    store = backend.store
    await store.save_if_version("u", "s", _state("u", "s", "one"), 0)
    backend.rewrite_head_state("u", "s", lambda b: b"{not json" + b)
    before = backend.snapshot()
    with pytest.raises(CorruptState, match=slot_name("u", "s") + ".*not valid JSON"):
        await _second(backend).get_versioned("u", "s")
    for expected in (1, UNCONDITIONAL):
        with pytest.raises(CorruptState, match=slot_name("u", "s")):
            await store.save_if_version("u", "s", _state("u", "s", "x"), expected)
    assert backend.snapshot() == before
    backend.rewrite_head_state(
        "u",
        "s",
        lambda b: b[len(b"{not json") :].replace(b'"schema_version":1', b'"schema_version":99'),
    )
    with pytest.raises(UnsupportedSchemaVersion, match=slot_name("u", "s")):
        await _second(backend).get_versioned("u", "s")
