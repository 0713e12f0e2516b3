"""Scope mapping: (user_id, session_id) to a directory, injective and prefix-free."""

from __future__ import annotations

import pytest
from hookagent.errors import InvalidIdentifier
from hookagent.store.ids import MAX_ID_LENGTH
from hookagent.testing import HOSTILE_IDS
from hookagent_workspace import scope_names
from hookagent_workspace.scope import CHUNK, id_names
from hypothesis import given
from hypothesis import strategies as st

ids = st.text(min_size=1, max_size=MAX_ID_LENGTH).filter(
    lambda s: "\x00" not in s and all(not 0xD800 <= ord(c) <= 0xDFFF for c in s)
)
users = st.one_of(st.just(""), ids, st.sampled_from(HOSTILE_IDS))
sessions = st.one_of(ids, st.sampled_from(HOSTILE_IDS))


def _is_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) <= len(b) and b[: len(a)] == a


def test_layout_of_each_scope() -> None:
    assert scope_names("shared", "alice", "s1") == ()
    assert scope_names("user", "alice", "s1") == ("users", "alice")
    assert scope_names("session", "alice", "s1") == ("sessions", "alice", "s1")
    assert scope_names("user", "", "s1") == ("users", "~")
    assert scope_names("user", "../bob", "s") == ("users", "~2e~2e~2fbob")


@pytest.mark.parametrize("value", HOSTILE_IDS)
def test_every_hostile_id_gives_safe_names(value: str) -> None:
    for name in scope_names("session", value, value):
        assert name not in (".", "..") and "/" not in name and "\\" not in name
        assert len(name.encode()) <= 255


def test_long_ids_are_chunked_into_safe_names() -> None:
    names = id_names("\u00e9" * MAX_ID_LENGTH)  # 6 encoded chars each: 1536 characters
    assert len(names) > 1
    assert all(n.endswith("+") for n in names[:-1]) and not names[-1].endswith("+")
    assert all(len(n) <= CHUNK + 1 for n in names)


@given(users, sessions, users, sessions)
def test_distinct_identities_never_share_or_nest_a_directory(
    u1: str, s1: str, u2: str, s2: str
) -> None:
    for scope in ("user", "session"):
        a, b = scope_names(scope, u1, s1), scope_names(scope, u2, s2)
        same = u1 == u2 if scope == "user" else (u1, s1) == (u2, s2)
        if same:
            assert a == b
        else:
            assert not _is_prefix(a, b) and not _is_prefix(b, a), (scope, a, b)


@pytest.mark.parametrize("bad", ["nul\x00", "x" * (MAX_ID_LENGTH + 1), "\ud800", None, 7])
def test_ids_the_stores_refuse_are_refused(bad: object) -> None:
    with pytest.raises(InvalidIdentifier):
        scope_names("user", bad, "s")  # type: ignore[arg-type]
    with pytest.raises(InvalidIdentifier):
        scope_names("session", "u", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidIdentifier):
        scope_names("session", "u", "")
