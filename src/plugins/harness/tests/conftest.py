"""Run the real ``hookagent`` command with a state home and a workspace home of the test's own."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hookagent_cli.testing import HOOKAGENT

BLOCKED = "model-openai,store-sql,store-redis,example-tools,example-store"


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "state", tmp_path / "workspaces"


@pytest.fixture
def cli_env(homes: tuple[Path, Path]) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("HOOKAGENT_STORE", "HOOKAGENT_PRESET", "HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(name, None)
    env["HOOKAGENT_STATE_HOME"] = str(homes[0])
    env["HOOKAGENT_WORKSPACE_HOME"] = str(homes[1])
    env["HOOKAGENT_BLOCKED_PLUGINS"] = BLOCKED
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "120"
    return env


@pytest.fixture
def hk(cli_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(
        *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HOOKAGENT, *args],
            capture_output=True,
            text=True,
            env=env or cli_env,
            timeout=timeout,
            check=False,
        )

    return run
