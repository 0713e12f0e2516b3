"""The quick start works after a plain ``pip install hookagent hookagent-model-demo``.

Editable installs hide packaging mistakes (a module missing from the wheel, a dependency only
the dev venv has, an import of pytest), so this test builds real wheels, installs them into a
fresh venv without pytest, and runs every python block of the user-facing pages there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = (ROOT / "src" / "core", ROOT / "src" / "plugins" / "model-demo")
PAGES = ("quickstart.md", "runs.md", "state.md", "models/writing-a-model-provider.md")


def blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run(*cmd: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOOKAGENT_STATE_HOME"] = str(cwd / "state-home")
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def check(result: subprocess.CompletedProcess[str], what: str) -> None:
    assert result.returncode == 0, f"{what} failed:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the two wheels and their declared dependencies."""
    work = tmp_path_factory.mktemp("wheels")
    wheels = work / "dist"
    check(
        run(
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            wheels,
            *DISTRIBUTIONS,
            cwd=work,
        ),
        "pip wheel",
    )
    built = sorted(wheels.glob("*.whl"))
    assert [w.name.split("-")[0] for w in built] == ["hookagent", "hookagent_model_demo"]
    venv = work / "venv"
    check(run(sys.executable, "-m", "venv", venv, cwd=work), "python -m venv")
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    check(run(python, "-m", "pip", "install", "-q", *built, cwd=work), "pip install the wheels")
    return python


def test_the_wheels_install_without_pytest(wheel_venv: Path, tmp_path: Path) -> None:
    probe = run(wheel_venv, "-c", "import hookagent, pytest", cwd=tmp_path)
    assert probe.returncode != 0 and "No module named 'pytest'" in probe.stderr
    where = run(wheel_venv, "-c", "import hookagent; print(hookagent.__file__)", cwd=tmp_path)
    check(where, "import hookagent")
    assert "site-packages" in where.stdout and str(ROOT / "src") not in where.stdout


def test_the_conformance_suite_names_pytest_when_it_is_missing(
    wheel_venv: Path, tmp_path: Path
) -> None:
    code = (
        "from hookagent.testing import ScriptedModel, tool_call, HookRecorder, HOSTILE_IDS\n"
        "try:\n"
        "    from hookagent.testing import StoreConformance\n"
        "except ModuleNotFoundError as exc:\n"
        "    assert exc.name == 'pytest' and 'pip install' in str(exc), exc\n"
        "    print('refused')\n"
    )
    result = run(wheel_venv, "-c", code, cwd=tmp_path)
    check(result, "the lazy import")
    assert result.stdout.strip() == "refused"


EXAMPLES = [(page, i, code) for page in PAGES for i, code in enumerate(blocks(page))]


@pytest.mark.parametrize(
    ("page", "index", "code"), EXAMPLES, ids=[f"{p}#{i}" for p, i, _ in EXAMPLES]
)
def test_docs_example_runs_from_the_wheels(
    wheel_venv: Path, tmp_path: Path, page: str, index: int, code: str
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    check(run(wheel_venv, script, cwd=tmp_path), f"docs/{page} example #{index}")


def test_every_quick_start_block_is_covered() -> None:
    assert len(blocks("quickstart.md")) >= 3  # configure/call/resume, async, demo provider
