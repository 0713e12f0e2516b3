"""A real directory tree with symlinks pointing in, out and round, for the path rules; the
``hookagent`` command as a subprocess and in a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


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

HOOKAGENT = [sys.executable, "-m", "hookagent_cli.main"]
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


class PtyProcess:
    """A child on a pseudo-terminal (copied from the CLI's tests: chat reads a real tty)."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.ONLCR  # keep "\n" as is in what we read
        termios.tcsetattr(slave, termios.TCSANOW, attrs)

        def become_terminal_owner() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=become_terminal_owner,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.output = ""
        self._seen = 0

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.output += data.decode("utf-8", "replace").replace("\r", "")
        return True

    def expect(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """Wait for ``pattern`` (a regex) in the output after the previous match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.output, self._seen)
            if match:
                self._seen = match.end()
                return match
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.2)) and self.proc.poll() is not None):
                while self._read(0.05):
                    pass
                match = regex.search(self.output, self._seen)
                if match:
                    self._seen = match.end()
                    return match
                raise AssertionError(
                    f"{pattern!r} not seen (exit={self.proc.poll()}); output:\n{self.output}"
                )

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.05):
            pass
        rc = self.proc.poll()
        if rc is None:
            raise AssertionError(f"still running after {timeout}s; output:\n{self.output}")
        return rc

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        os.close(self.master)


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
