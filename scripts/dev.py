#!/usr/bin/env python3
"""Set up the development environment and run the project's jobs, with only Python and pip.

    python3 scripts/dev.py setup        # .venv with every distribution of the repo, editable
    python3 scripts/dev.py test [ARGS]  # setup, then ruff, mypy (strict: kernel and plugins) and pytest
    python3 scripts/dev.py demo         # setup, then `hookagent harness-demo` (the harness story)

uv users can run ``uv sync --all-packages`` instead of ``setup`` (the root pyproject.toml is a
uv workspace); this script stays the one path that needs nothing but pip.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("HOOKAGENT_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def members() -> list[Path]:
    """Every installable distribution: the kernel, the plugins, the example plugins."""
    found = [ROOT / "src" / "core"]
    for parent in (ROOT / "src" / "plugins", ROOT / "examples"):
        if parent.is_dir():
            found += sorted(p for p in parent.iterdir() if (p / "pyproject.toml").is_file())
    return found


def dev_requirements() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(data["dependency-groups"]["dev"])


def run(*cmd: str | Path, **kw: object) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)  # type: ignore[call-overload]


def fingerprint() -> str:
    h = hashlib.sha256()
    for m in members():
        h.update(str(m).encode())
        h.update((m / "pyproject.toml").read_bytes())
    h.update((ROOT / "pyproject.toml").read_bytes())
    return h.hexdigest()


def setup() -> None:
    stamp = VENV / ".hookagent-installed"
    if stamp.is_file() and stamp.read_text() == fingerprint():
        return
    if not PY.exists():
        run(sys.executable, "-m", "venv", VENV)
    run(PY, "-m", "pip", "install", "-q", "--upgrade", "pip")
    editable: list[str | Path] = []
    for m in members():
        editable += ["-e", m]
    run(PY, "-m", "pip", "install", "-q", *editable, *dev_requirements())
    stamp.write_text(fingerprint())


def test(args: list[str]) -> int:
    setup()
    run(BIN / "ruff", "check", ".")
    run(BIN / "ruff", "format", "--check", ".")
    run(BIN / "mypy")
    # Byte-compile once: where PYTHONDONTWRITEBYTECODE is set (this project's machines),
    # every process the tests start would otherwise compile hookagent's sources again
    # (about 0.5-0.8 s of a CLI process's 3 s start). Python only reads these files.
    run(PY, "-m", "compileall", "-q", "-j", "0", "src", "examples", "tests")
    result = subprocess.run([str(PY), "-m", "pytest", *args], cwd=ROOT)
    return result.returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"setup", "test", "demo"}:
        print(__doc__)
        return 2
    job, rest = argv[0], argv[1:]
    if job == "setup":
        setup()
        return 0
    if job == "test":
        return test(rest)
    setup()
    return subprocess.run([str(BIN / "hookagent"), "harness-demo", *rest], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
