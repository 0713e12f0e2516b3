"""The G6 lost-update harness: N processes doing read / append a token / compare-and-set.

Each worker records (outcome, token, version) for every attempt: ``ok`` (acknowledged),
``fail`` (VersionConflict: certainly not applied) or ``info`` (StoreUnavailable: unknown).
``check`` applies the specialised checker of the reliability plan (rules 1-4).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import attrs
from hookagent.errors import StoreUnavailable, VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store import UNCONDITIONAL
from hookagent_store_sql import SQLAgentStateStore

USER, SESSION = "g6-user", "g6-session"


def worker(
    url: str, options: dict[str, Any], wid: int, attempts: int, naive: bool
) -> list[tuple[str, str, int | None]]:
    return asyncio.run(_work(url, options, wid, attempts, naive))


async def _work(
    url: str, options: dict[str, Any], wid: int, attempts: int, naive: bool
) -> list[tuple[str, str, int | None]]:
    store = SQLAgentStateStore(url, **options)
    out: list[tuple[str, str, int | None]] = []
    try:
        for i in range(attempts):
            token = f"w{wid}-{i}"
            got = await store.get_versioned(USER, SESSION)
            assert got.state is not None
            got.state.context.append(Msg.user(token))
            expected = UNCONDITIONAL if naive else got.version
            try:
                v = await store.save_if_version(USER, SESSION, got.state, expected)
                out.append(("ok", token, v))
            except VersionConflict:
                out.append(("fail", token, None))
            except StoreUnavailable:
                out.append(("info", token, None))
    finally:
        await store.aclose()
    return out


async def seed(url: str, options: dict[str, Any]) -> None:
    store = SQLAgentStateStore(url, **options)
    try:
        await store.save_if_version(USER, SESSION, AgentState(SESSION, USER), 0)
    finally:
        await store.aclose()


async def final(url: str, options: dict[str, Any]) -> tuple[int, list[str]]:
    store = SQLAgentStateStore(url, **options)
    try:
        got = await store.get_versioned(USER, SESSION)
        assert got.state is not None
        return got.version, [m.text for m in got.state.context]
    finally:
        await store.aclose()


@attrs.frozen
class Verdict:
    acked: int
    failed: int
    unknown: int
    lost: int
    duplicated: int
    phantom: int
    double_acked_versions: int
    version_ok: bool

    @property
    def clean(self) -> bool:
        return (
            not (self.lost or self.duplicated or self.phantom or self.double_acked_versions)
            and self.version_ok
        )


def check(records: list[tuple[str, str, int | None]], version: int, history: list[str]) -> Verdict:
    seen = Counter(history)
    ok = [r for r in records if r[0] == "ok"]
    fail = {r[1] for r in records if r[0] == "fail"}
    info = {r[1] for r in records if r[0] == "info"}
    invoked = {r[1] for r in records}
    versions = Counter(r[2] for r in ok)
    lost = sum(1 for r in ok if seen[r[1]] == 0)
    duplicated = sum(1 for t, n in seen.items() if n > 1)
    phantom = sum(1 for t in seen if t not in invoked or t in fail)
    info_present = sum(1 for t in info if seen[t] == 1)
    return Verdict(
        acked=len(ok),
        failed=len(fail),
        unknown=len(info),
        lost=lost,
        duplicated=duplicated,
        phantom=phantom,
        double_acked_versions=sum(1 for n in versions.values() if n > 1),
        version_ok=version == 1 + len(ok) + info_present,
    )
