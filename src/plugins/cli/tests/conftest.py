"""Drive the real ``hookagent`` command: as a subprocess, or in a pseudo-terminal for chat."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hookagent_cli.testing import HOOKAGENT, PtyProcess

# Plugins these tests do not need: skipping them keeps each CLI start fast and the tool list
# deterministic (blocked entry points are never imported). The plugins test unblocks them.
BLOCKED = "model-openai,store-sql,store-redis,example-tools,example-store"


@pytest.fixture
def state_home(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def cli_env(state_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HOOKAGENT_STORE", None)
    env.pop("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", None)
    env["HOOKAGENT_STATE_HOME"] = str(state_home)
    env["HOOKAGENT_BLOCKED_PLUGINS"] = BLOCKED
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "120"
    env["PYTHONFAULTHANDLER"] = "1"  # a hung child dumps its threads on SIGABRT (see wait)
    return env


@pytest.fixture
def hk(cli_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(
        *args: str, env: dict[str, str] | None = None, stdin: str | None = None, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HOOKAGENT, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env or cli_env,
            timeout=timeout,
            check=False,
        )

    return run


@pytest.fixture
def pty_cli(cli_env: dict[str, str]) -> Iterator[Callable[..., PtyProcess]]:
    started: list[PtyProcess] = []

    def spawn(*args: str, env: dict[str, Any] | None = None) -> PtyProcess:
        child = PtyProcess([*HOOKAGENT, *args], env or cli_env)
        started.append(child)
        return child

    yield spawn
    for child in started:
        child.close()
