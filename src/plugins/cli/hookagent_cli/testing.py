"""Driving the ``hookagent`` command on a pseudo-terminal, for the CLI's tests and for
plugins that test their own CLI commands or chat prompts (``hookagent chat`` reads a real
tty). POSIX only; imported by tests, never by the command itself."""

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

HOOKAGENT = [sys.executable, "-m", "hookagent_cli.main"]
"""The command, run by this interpreter (no console script on PATH needed)."""


class PtyProcess:
    """A child with a pseudo-terminal as its controlling terminal (so ``\\x03`` is SIGINT)."""

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
            preexec_fn=become_terminal_owner,  # runs after setsid(): the pty becomes ours
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
                if self.proc.poll() is not None:
                    while self._read(0.05):
                        pass
                    match = regex.search(self.output, self._seen)
                    if match:
                        self._seen = match.end()
                        return match
                if left <= 0 or self.proc.poll() is not None:
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
            os.kill(self.proc.pid, signal.SIGABRT)  # faulthandler prints every thread's stack
            end = time.monotonic() + 5
            while time.monotonic() < end and self._read(0.2):
                pass
            raise AssertionError(f"still running after {timeout}s; output:\n{self.output}")
        return rc

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        os.close(self.master)
