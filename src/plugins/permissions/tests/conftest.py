"""A real directory tree with symlinks pointing in, out and round, for the path rules; the
``hookagent`` command as a subprocess and in a pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hookagent_cli.testing import HOOKAGENT, PtyProcess


def make_tree(root: Path) -> Path:
    """``root/work`` (the working directory) and what lies around it; returns ``work``."""
    work = root / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "a.py").write_text("a")
    (work / "notes.md").write_text("n")
    (root / "outside").mkdir()
    (root / "outside" / "secret").write_text("s")
    (root / "work-evil").mkdir()  # a sibling whose name starts like the working directory
    (root / "w\u043erk").mkdir()  # a Cyrillic o: looks like "work"
    os.symlink("../outside", work / "link_out")
    os.symlink("src", work / "link_in")
    os.symlink("loop", work / "loop")
    os.symlink("..", work / "up")
    os.symlink(str(root / "outside" / "secret"), work / "abs_out")
    return work


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_tree(tmp_path.resolve())


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tree for a whole module (hypothesis runs many examples on it)."""
    return make_tree(tmp_path_factory.mktemp("hostile").resolve())


# --------------------------------------------------------------------------- the CLI

BLOCKED = "model-openai,store-sql,store-redis,example-tools,example-store"


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HOOKAGENT_STORE", None)
    env.pop("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", None)
    env["HOOKAGENT_STATE_HOME"] = str(tmp_path / "state")
    env["HOOKAGENT_BLOCKED_PLUGINS"] = BLOCKED
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "120"
    return env


@pytest.fixture
def hk(cli_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HOOKAGENT, *args],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=90,
            check=False,
        )

    return run


@pytest.fixture
def pty_cli(cli_env: dict[str, str]) -> Iterator[Callable[..., PtyProcess]]:
    started: list[PtyProcess] = []

    def spawn(*args: str) -> PtyProcess:
        child = PtyProcess([*HOOKAGENT, *args], cli_env)
        started.append(child)
        return child

    yield spawn
    for child in started:
        child.close()
