"""Isolation, as a property: with per-user (and per-session) scope, nothing user A does
through the workspace reads, lists or changes user B's files, whatever the ids and paths;
with shared scope they see the same files. On local disk and on memory://."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import fsspec
import pytest
from hookagent.store.ids import MAX_ID_LENGTH, encode_id
from hookagent.testing import HOSTILE_IDS
from hookagent_workspace import FsWorkspace, Limits, WorkspaceError, open_backend, scope_names
from hookagent_workspace.errors import (
    WorkspaceFileNotFound,
    WorkspaceLimitExceeded,
    WorkspacePathError,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ids = st.text(min_size=1, max_size=MAX_ID_LENGTH).filter(
    lambda s: "\x00" not in s and all(not 0xD800 <= ord(c) <= 0xDFFF for c in s)
)
users = st.one_of(st.just(""), st.sampled_from(HOSTILE_IDS), ids)
sessions = st.one_of(st.sampled_from(HOSTILE_IDS), ids)


def escapes(victim_user: str, victim_session: str) -> list[str]:
    """Paths that would reach the victim's directory if bounds were lexical only."""
    enc_u, enc_s = encode_id(victim_user), encode_id(victim_session)
    out = []
    for depth in range(1, 5):
        up = "../" * depth
        out += [
            f"{up}{enc_u}/secret.txt",
            f"{up}users/{enc_u}/secret.txt",
            f"{up}sessions/{enc_u}/{enc_s}/secret.txt",
            f"{up}secret.txt",
        ]
    out += [
        f"users/{enc_u}/secret.txt",  # inside A's own tree: fine, but never B's file
        f"/users/{enc_u}/secret.txt",
        f"memory://users/{enc_u}/secret.txt",
        f"..\\users\\{enc_u}\\secret.txt",
        "secret.txt",
        "d/secret.txt",
        "",
    ]
    return out


paths = st.one_of(
    st.sampled_from(["secret.txt", "d/secret.txt", "../secret.txt", "a/../../secret.txt"]),
    st.text(max_size=40),
    st.lists(
        st.sampled_from(["..", ".", "d", "secret.txt", "", "users", "~", "x"]), max_size=6
    ).map("/".join),
)


def _base(kind: str, tmp: Path, ftp: str = "") -> str:
    if kind == "local":
        return str(tmp / uuid.uuid4().hex)
    if kind == "ftp":
        return f"{ftp}/iso-{uuid.uuid4().hex}"
    return f"memory://hkw-iso-{uuid.uuid4().hex}"


async def _attack(a: FsWorkspace, path: str, secret: str) -> None:
    """Every operation A may try on one path; none may reveal or change B's secret."""
    for attempt in (a.read_text(path), a.list(path), a.walk(path), a.exists(path)):
        try:
            got = await attempt
        except (WorkspaceError, WorkspacePathError, WorkspaceFileNotFound, WorkspaceLimitExceeded):
            continue
        assert secret not in repr(got)
    for write in (a.write_text(path, "A-WAS-HERE"), a.append_text(path, "A"), a.remove(path)):
        try:
            await write
        except (WorkspaceError, WorkspacePathError, WorkspaceFileNotFound, WorkspaceLimitExceeded):
            pass


async def _scenario(
    base: str, scope: str, ua: str, sa: str, ub: str, sb: str, tried: list[str]
) -> None:
    backend = open_backend(base)
    a = FsWorkspace(backend, scope_names(scope, ua, sa), Limits())  # type: ignore[arg-type]
    b = FsWorkspace(backend, scope_names(scope, ub, sb), Limits())  # type: ignore[arg-type]
    secret = f"SECRET-{uuid.uuid4().hex}"
    await b.write_text("secret.txt", secret)
    await b.write_text("d/secret.txt", secret)
    await b.write_text(f"{secret}.name", "a secret name: listing it would leak it")
    before = (await b.walk())[0]
    for path in [*escapes(ub, sb), *tried]:
        await _attack(a, path, secret)
    # B's files are exactly as B left them, and A's listing holds only what A wrote
    assert (await b.walk())[0] == before
    assert await b.read_text("secret.txt") == await b.read_text("d/secret.txt") == secret
    for path, _ in (await a.walk())[0]:
        assert secret not in path and secret not in await a.read_text(path)


def _cleanup(base: str) -> None:
    if base.startswith("memory://"):
        fs = fsspec.filesystem("memory")
        if fs.exists(base):
            fs.rm(base, recursive=True)


@pytest.mark.parametrize("kind", ["local", "memory", "ftp"])
@pytest.mark.parametrize("scope", ["user", "session"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ua=users, sa=sessions, ub=users, sb=sessions, tried=st.lists(paths, max_size=6))
def test_a_cannot_read_list_or_write_bs_files(
    tmp_path: Path,
    ftp_url: str,
    kind: str,
    scope: str,
    ua: str,
    sa: str,
    ub: str,
    sb: str,
    tried: list[str],
) -> None:
    if (ua if scope == "user" else (ua, sa)) == (ub if scope == "user" else (ub, sb)):
        return  # the same identity: one directory, by design
    base = _base(kind, tmp_path, ftp_url)
    try:
        anyio.run(_scenario, base, scope, ua, sa, ub, sb, tried)
    finally:
        _cleanup(base)


@pytest.mark.parametrize("kind", ["local", "memory", "ftp"])
def test_shared_scope_shares_every_file(tmp_path: Path, ftp_url: str, kind: str) -> None:
    base = _base(kind, tmp_path, ftp_url)

    async def main() -> None:
        backend = open_backend(base)
        a = FsWorkspace(backend, scope_names("shared", "alice", "s1"))
        b = FsWorkspace(backend, scope_names("shared", "bob", "s2"))
        await b.write_text("notes/plan.md", "from bob")
        assert await a.read_text("notes/plan.md") == "from bob"
        assert await a.list("notes") == ["notes/plan.md"]
        await a.append_text("notes/plan.md", "\nand alice")
        assert await b.read_text("notes/plan.md") == "from bob\nand alice"
        assert a.url == b.url

    try:
        anyio.run(main)
    finally:
        _cleanup(base)


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_per_user_scope_keeps_a_users_sessions_together(tmp_path: Path, kind: str) -> None:
    base = _base(kind, tmp_path)

    async def main() -> None:
        backend = open_backend(base)
        s1 = FsWorkspace(backend, scope_names("user", "alice", "s1"))
        s2 = FsWorkspace(backend, scope_names("user", "alice", "s2"))
        other = FsWorkspace(backend, scope_names("session", "alice", "s2"))
        await s1.write_text("m.md", "alice's")
        assert await s2.read_text("m.md") == "alice's"
        assert not await other.exists("m.md")  # session scope: s2 has its own directory

    try:
        anyio.run(main)
    finally:
        _cleanup(base)
