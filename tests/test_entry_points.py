"""entry_points.md agrees with the installed entry points and with the hooks each implements."""

from __future__ import annotations

import importlib
import importlib.metadata as md
import re
import tomllib
from pathlib import Path

import pluggy
from hookagent import hookspecs

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("hookagent", "pytest11", "console_scripts")


def repo_distributions() -> set[str]:
    names = set()
    for pyproject in [
        ROOT / "src/core/pyproject.toml",
        *ROOT.glob("src/plugins/*/pyproject.toml"),
        *ROOT.glob("examples/*/pyproject.toml"),
    ]:
        names.add(tomllib.loads(pyproject.read_text())["project"]["name"])
    return names


def documented() -> list[tuple[str, str, str, str, str]]:
    rows = []
    for line in (ROOT / "entry_points.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] in GROUPS:
            rows.append((cells[0], cells[1], cells[2], cells[3], cells[4]))
    return rows


def declared() -> set[tuple[str, str, str, str]]:
    ours = {re.sub(r"[-_.]+", "-", n).lower() for n in repo_distributions()}
    found = set()
    for dist in md.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        if name not in ours:
            continue
        for ep in dist.entry_points:
            if ep.group in GROUPS:
                found.add((ep.group, ep.name, name, ep.value))
    return found


def test_every_repo_distribution_is_installed() -> None:
    installed = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower() for d in md.distributions()}
    missing = {n for n in repo_distributions() if n.lower() not in installed}
    assert not missing, f"not installed (run python3 scripts/dev.py setup): {missing}"


def test_table_matches_installed_entry_points() -> None:
    table = {(g, n, d, o) for g, n, d, o, _ in documented()}
    assert table == declared()


def test_hooks_column_matches_the_implementations() -> None:
    known = {n for n in dir(hookspecs) if n.startswith("hookagent_")}
    for group, name, _dist, obj, hooks in documented():
        if group != "hookagent":
            continue
        module = importlib.import_module(obj)
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        implemented = {c.name for c in (pm.get_hookcallers(pm.register(module) and module) or [])}
        implemented |= {a for a in dir(module) if a.startswith("hookagent_")} - known
        listed = {h.strip() for h in hooks.split(",")}
        assert implemented == listed, (
            f"{name}: implements {sorted(implemented)}, table says {sorted(listed)}"
        )


def test_ordering_column_matches_the_declared_middleware_order() -> None:
    """Middleware order is declared (``Middleware(order=N)``), listed here, and checked."""
    from hookagent.plugins import HookagentPluginManager
    from hookagent.relay import HookRelay

    rows = {}
    for line in (ROOT / "entry_points.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] == "hookagent":
            rows[cells[1]] = (cells[3], cells[5])
    for name, (obj, ordering) in rows.items():
        pm = HookagentPluginManager()
        pm.register(importlib.import_module(obj), name=name)
        relay = HookRelay(pm)
        parts = []
        for hook, label in (
            ("hookagent_wrap_tool_call", "tool"),
            ("hookagent_wrap_model_call", "model"),
        ):
            parts += [f"{label} order {order}" for order, _, _ in relay.middleware_chain(hook)]
        assert ordering == (", ".join(parts) or "any"), f"{name}: ordering column says {ordering!r}"


HARNESS_MODEL_CHAIN = [
    ("memory", 100),
    ("compaction", 200),
    ("tasks", 300),
    ("plan-mode", 400),
    ("session-log", 10000),
]
"""Request shaping, outermost first: memory's files are in the prompt compaction measures,
the task projection and the banner are added to the compacted request, and the session log
records the dispatch innermost, right before the provider is called."""
HARNESS_TOOL_CHAIN = [
    ("plan-mode", 100),
    ("permissions", 200),
    ("compaction", 900),
    ("session-log", 10000),
]
"""Tool gating, outermost first: plan mode denies before anyone is asked, permissions ask,
offloading post-processes the result, the session log records the dispatch innermost."""


def _harness_pm() -> tuple[object, dict[str, str]]:
    from hookagent.plugins import HookagentPluginManager
    from hookagent.relay import HookRelay

    names = {n for n, _ in HARNESS_MODEL_CHAIN + HARNESS_TOOL_CHAIN}
    objects = {cells[1]: cells[3] for cells in _rows() if cells[1] in names}
    pm = HookagentPluginManager()
    for name, obj in objects.items():
        pm.register(importlib.import_module(obj), name=name)
    return HookRelay(pm), objects


def _rows() -> list[list[str]]:
    rows = []
    for line in (ROOT / "entry_points.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] == "hookagent":
            rows.append(cells)
    return rows


def test_the_harness_chains_run_in_the_documented_order() -> None:
    """The harness plugins together compose in exactly this order; a changed marker fails."""
    relay, objects = _harness_pm()
    assert set(objects) == {n for n, _ in HARNESS_MODEL_CHAIN + HARNESS_TOOL_CHAIN}
    model = [
        (name, order) for order, name, _ in relay.middleware_chain("hookagent_wrap_model_call")
    ]  # type: ignore[attr-defined]
    tool = [(name, order) for order, name, _ in relay.middleware_chain("hookagent_wrap_tool_call")]  # type: ignore[attr-defined]
    assert model == HARNESS_MODEL_CHAIN
    assert tool == HARNESS_TOOL_CHAIN


def test_the_order_table_lists_every_declared_key() -> None:
    """The chain/order table at the top holds exactly the keys the plugins declare (plus the
    retry example's), so it cannot drift from the ordering column either."""
    table = set()
    for line in (ROOT / "entry_points.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in ("tool", "model"):
            table.add((cells[0], int(cells[1])))
    declared = {("model", -100)}  # examples/retry_model.py: not an entry point
    for cells in _rows():
        for part in cells[5].split(", "):
            if part != "any":
                chain, _, order = part.split(" ")
                declared.add((chain, int(order)))
    declared.discard(("tool", 0))  # example-tools' audit middleware: a bare callable
    assert table == declared
