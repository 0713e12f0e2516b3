"""The rows of a sitting, in the order they run (``sitting.py`` runs them, the report reads them).

Counts and choices come from the environment (defaults: the published sitting; ``SMOKE=1``:
tiny counts and a few peers):

* ``PEERS_W1`` (300), ``OURS_W1`` (1000), ``LONG_W1`` (10000: memory and Redis, ours only),
  ``W2_SESSIONS`` (200), ``W3_REPS`` (3), ``W1_BUDGET`` (120 s: a peer's W1 stops past it);
* ``PEER_CONFIGS``: space-separated ``peer:store[:variant]`` (default: every configuration
  the harness offers, LangGraph's durability modes and delta channel included);
* ``SLOW_PEERS`` ("adk"): peers whose rows take minutes (ADK loads every event on every
  call: ~0.5-1 s per call by call 300, W2 at 5-40 calls/s) run with ``SLOW_W1_BUDGET`` (60 s:
  their W1 is cut, and the row says so) and ``SLOW_W2_SESSIONS`` (100: W2 is a rate at 50 in
  flight either way), so that the sitting stays near 25 minutes;
* ``W4`` (1), ``BASELINES`` (1), ``NEIGHBOUR`` (1): 0 leaves that part out;
* ``OURS_REDIS_URL``, ``OURS_PG_URL``: our own rows' servers (default: the harness's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

SMOKE_DEFAULTS = {"PEERS_W1": 30, "OURS_W1": 30, "LONG_W1": 300, "W2_SESSIONS": 20, "W3_REPS": 1}
DEFAULTS = {"PEERS_W1": 300, "OURS_W1": 1000, "LONG_W1": 10000, "W2_SESSIONS": 200, "W3_REPS": 3}
DEFAULTS_ANY = {"W1_BUDGET": 120, "W4": 1, "BASELINES": 1, "NEIGHBOUR": 1}
DEFAULTS_ANY |= {"SLOW_W1_BUDGET": 60, "SLOW_W2_SESSIONS": 100, "W4_OWN_SESSIONS": 400}

# LangGraph's durability modes ("async" is its default) and its delta channel (beta)
LG_VARIANTS: dict[str, dict[str, str]] = {
    "": {},
    "exit": {"BENCH_LG_DURABILITY": "exit"},
    "sync": {"BENCH_LG_DURABILITY": "sync"},
    "delta": {"BENCH_LG_DELTA": "1"},
    "delta_exit": {"BENCH_LG_DELTA": "1", "BENCH_LG_DURABILITY": "exit"},
}
# per store group: the peers' configurations, and the hookagent stores run beside each
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "memory": (
        [
            "langgraph:none",
            "langgraph:mem",
            "langgraph:mem:exit",
            "openai_agents:none",
            "openai_agents:mem",
            "agentscope:mem",
            "adk:mem",
        ],
        ["mem"],
    ),
    "redis": (["openai_agents:redis", "agentscope:redis"], ["redis"]),
    "postgres": (
        [f"langgraph:postgres{':' + v if v else ''}" for v in LG_VARIANTS]
        + ["openai_agents:postgres", "agentscope:postgres", "adk:postgres"],
        ["postgres"],
    ),
    # local disk: each peer row sits between our SQLite row and our file-store row
    "sqlite": (
        [f"langgraph:sqlite{':' + v if v else ''}" for v in LG_VARIANTS]
        + ["openai_agents:sqlite", "agentscope:sqlite", "adk:sqlite", "adk:sqlite_native"],
        ["sqlite", "file"],
    ),
}
SMOKE_PEERS = "langgraph:sqlite langgraph:sqlite:exit adk:mem adk:sqlite openai_agents:redis"
CPU_BOUND_STORES = {"none", "mem", "memory"}  # in-memory and no-persistence rows
OURS_W1_STORES = {"memory": "memory", "redis": "redis", "postgres": "postgres"}
OURS_W1_STORES |= {"sqlite": "sqlite", "file": "file"}
LONG_STORES = ("memory", "redis")
PEER_NAMES = {
    "hookagent": "hookagent",
    "langgraph": "LangGraph",
    "openai_agents": "OpenAI Agents SDK",
    "agentscope": "AgentScope",
    "adk": "Google ADK",
}


def smoke() -> bool:
    return os.environ.get("SMOKE", "0") == "1"


def env_int(name: str) -> int:
    base = SMOKE_DEFAULTS if smoke() else DEFAULTS
    default = base.get(name, DEFAULTS_ANY.get(name, 0))
    return int(os.environ.get(name, default))


def our_urls(work: Path) -> dict[str, str]:
    """Our rows' stores, on the harness's servers unless told otherwise."""
    rport = os.environ.get("BENCH_REDIS_PORT", "6390")
    pport = os.environ.get("BENCH_PG_PORT", "55432")
    return {
        "memory": "memory",
        "file": f"file://{work}/data/habench-files",
        "redis": os.environ.get("OURS_REDIS_URL", f"redis://127.0.0.1:{rport}/8?prefix=habench"),
        "postgres": os.environ.get(
            "OURS_PG_URL",
            f"postgresql+asyncpg://bench@127.0.0.1:{pport}/postgres?table_prefix=habench_",
        ),
        "sqlite": f"sqlite+aiosqlite:///{work}/data/habench-w1.db",
    }


@dataclass
class Row:
    kind: str  # harness | ours | w4 | cmd | burner_on | burner_off
    group: str
    name: str
    key: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    result: str = ""  # the result JSON, relative to the sitting folder
    peer: str = ""
    store: str = ""
    variant: str = ""
    cpu_bound: bool = False
    checked: bool = True  # False: beside a busy core on purpose, not held to CPU/wall
    partner_of: int | None = None  # for our harness rows: the peer row it sits beside
    timeout: float = 1800
    # filled in by the run
    rc: int | None = None
    wall_s: float | None = None
    started: str = ""
    load_start: list[float] = field(default_factory=list)
    load_end: list[float] = field(default_factory=list)
    w1_cpu_wall: float | None = None
    w2_cpu_wall: float | None = None
    proc: Any = None

    @property
    def result_name(self) -> str:
        return Path(self.result).name.removesuffix(".json")

    def cmd(self, py: str, work: Path, out: Path) -> list[str]:
        subst = {"{PY}": py, "{WORK}": str(work), "{OUT}": str(out), "{HERE}": str(HERE)}
        cmd = [py]
        for a in self.args:
            for k, v in subst.items():
                a = a.replace(k, v)
            cmd.append(a)
        return cmd

    def record(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "proc"}
        return d


def harness_row(peer: str, store: str, variant: str, group: str, tag: str) -> Row:
    n, budget, sessions = env_int("PEERS_W1"), env_int("W1_BUDGET"), env_int("W2_SESSIONS")
    if peer in os.environ.get("SLOW_PEERS", "adk").split():
        budget = min(budget, env_int("SLOW_W1_BUDGET"))
        sessions = min(sessions, env_int("SLOW_W2_SESSIONS"))
    args = ["run_peers.py", "run", "--peer", peer, "--store", store, "--w1-calls", str(n)]
    args += ["--w1-budget", str(budget), "--w2-sessions", str(sessions)]
    args += ["--w3-reps", str(env_int("W3_REPS")), "--tag", tag]
    label = PEER_NAMES.get(peer, peer) + f" + {store}" + (f" [{variant}]" if variant else "")
    return Row(
        kind="harness",
        group=group,
        name=label,
        key=f"{peer}__{store}{tag}",
        args=args,
        env=LG_VARIANTS.get(variant, {}) if peer == "langgraph" else {},
        result=f"peers/{peer}__{store}{tag}.json",
        peer=peer,
        store=store,
        variant=variant,
        cpu_bound=store in CPU_BOUND_STORES,
    )


def ours_row(
    store: str,
    url: str,
    group: str,
    calls: int,
    label: str,
    *,
    w1: bool = True,
    w2: bool = True,
    w3: bool = True,
) -> Row:
    """workload.py on one store; without W1, W3 resumes the session an earlier row made."""
    args = ["{HERE}/workload.py", "--store", url, "--label", label, "--w1-calls", str(calls)]
    args += ["--w2-sessions", str(env_int("W2_SESSIONS")), "--w3-reps", str(env_int("W3_REPS"))]
    args += [
        "--json",
        f"{{OUT}}/ours/{label}.json",
        "--times",
        f"{{OUT}}/ours/{label}.w1times.json",
    ]
    skip = [] if w2 else ["w2"]
    if not w1:
        skip.append("w1")
    if label.endswith("-10k") or not w1:
        skip.append("build")
    if skip:
        args += ["--skip", ",".join(skip)]
    if w3 and store != "memory":
        args.append("--w3")
    return Row(
        kind="ours",
        group=group,
        name=f"hookagent {label} (ours, {calls} calls)",
        key=f"ours-{label}",
        args=args,
        result=f"ours/{label}.json",
        peer="hookagent",
        store=store,
        cpu_bound=store == "memory",
    )


def peer_configs() -> dict[str, list[tuple[str, str, str]]]:
    """Group -> [(peer, store, variant)] in run order."""
    wanted = os.environ.get("PEER_CONFIGS") or (SMOKE_PEERS if smoke() else "")
    out: dict[str, list[tuple[str, str, str]]] = {g: [] for g in GROUPS}
    chosen = wanted.split() if wanted else [c for g in GROUPS.values() for c in g[0]]
    for cfg in chosen:
        peer, store, *rest = cfg.split(":")
        variant = rest[0] if rest else ""
        group = next((g for g, (cfgs, _) in GROUPS.items() if cfg in cfgs), None)
        if group is None:
            group = {"none": "memory", "mem": "memory", "sqlite_native": "sqlite"}.get(store, store)
        out.setdefault(group, []).append((peer, store, variant))
    return out


def build_plan(work: Path) -> list[Row]:
    urls = our_urls(work)
    plan: list[Row] = []
    n = 0
    for group, configs in peer_configs().items():
        partners = GROUPS.get(group, ([], [group]))[1]
        for k, (peer, store, variant) in enumerate(configs):
            peer_r = harness_row(peer, store, variant, group, f"_{variant}" if variant else "")
            ours = []
            for s in partners:
                n += 1
                r = harness_row("hookagent", s, "", group, f"_r{n:02d}")
                ours.append(r)
            # alternate: ours then the peer, then the peer then ours (mirrored)
            seq = [*ours, peer_r] if k % 2 == 0 else [peer_r, *reversed(ours)]
            if len(ours) == 2:  # between our two stores: sqlite, peer, file / file, peer, sqlite
                seq = [ours[0], peer_r, ours[1]] if k % 2 == 0 else [ours[1], peer_r, ours[0]]
            base = len(plan)
            plan.extend(seq)
            at = base + seq.index(peer_r)
            for r in ours:
                r.partner_of = at
        for hs in partners:
            s = "memory" if hs == "mem" else hs
            plan.append(ours_row(s, urls[s], group, env_int("OURS_W1"), OURS_W1_STORES[s]))
            if s in LONG_STORES and env_int("LONG_W1"):
                url = urls[s].replace(
                    "prefix=habench", "prefix=habench10k"
                )  # W3 later reads habench
                long = ours_row(s, url, group, env_int("LONG_W1"), f"{s}-10k", w2=False, w3=False)
                plan.append(long)
    if env_int("W4"):
        small = smoke()
        for store in ("redis", "postgres"):
            args = ["{HERE}/w4.py", "--store", store, "--procs", "1,2,4"]
            args += ["--json", f"{{OUT}}/w4-{store}.json"]
            if small:
                args += ["--own-sessions", "20", "--calls", "3", "--shared-sessions", "2"]
                args += ["--shared-calls", "6", "--inflight", "8"]
            else:
                args += ["--own-sessions", str(env_int("W4_OWN_SESSIONS"))]
            rport = os.environ.get("BENCH_REDIS_PORT", "6390")
            env = {
                "BENCH_W4_REDIS": urls["redis"].replace(
                    "/8?prefix=habench", "/9?prefix=habench-w4"
                ),
                "BENCH_W4_GATE": f"redis://127.0.0.1:{rport}/9?prefix=habench-w4gate",
                "BENCH_W4_PG": urls["postgres"].replace(
                    "table_prefix=habench_", "table_prefix=habench_w4_"
                ),
            }
            plan.append(
                Row(
                    kind="w4",
                    group="w4",
                    name=f"W4 {store} (1, 2, 4 processes)",
                    key=f"w4-{store}",
                    args=args,
                    env=env,
                    result="",
                )
            )
    if env_int("BASELINES"):
        rport = os.environ.get("BENCH_REDIS_PORT", "6390")
        pport = os.environ.get("BENCH_PG_PORT", "55432")
        plan.append(
            Row(
                kind="harness",
                group="baselines",
                name="baselines.py (the harness's)",
                key="baselines",
                args=["baselines.py"],
            )
        )
        plan.append(
            Row(
                kind="cmd",
                group="baselines",
                name="baselines_redis.py",
                key="baselines_redis",
                args=["{HERE}/baselines_redis.py", "--url", f"redis://127.0.0.1:{rport}/10"],
            )
        )
        plan.append(
            Row(
                kind="cmd",
                group="baselines",
                name="baselines_jsonfile.py",
                key="baselines_jsonfile",
                args=[
                    "{HERE}/baselines_jsonfile.py",
                    "--dir",
                    "{WORK}/data/bjf",
                    "--json",
                    "{OUT}/baselines_jsonfile.json",
                ],
            )
        )
        plan.append(
            Row(
                kind="cmd",
                group="baselines",
                name="baselines_sql.py",
                key="baselines_sql",
                args=[
                    "{HERE}/baselines_sql.py",
                    "--pg",
                    f"postgresql://bench@127.0.0.1:{pport}/postgres",
                    "--sqlite",
                    "{WORK}/data",
                ],
            )
        )
    if env_int("NEIGHBOUR"):
        plan.append(Row(kind="burner_on", group="neighbour", name="a busy core on", key="burner"))
        for s in ("file", "redis"):
            r = ours_row(s, urls[s], "neighbour", env_int("OURS_W1"), f"{s}-busy", w1=False)
            r.args += ["--w3-reps", str(max(env_int("W3_REPS"), 9) if not smoke() else 1)]
            r.checked = False
            r.name = f"hookagent {s}: W2 and W3 beside a busy core"
            plan.append(r)
        plan.append(Row(kind="burner_off", group="neighbour", name="a busy core off", key="burner"))
    return plan
