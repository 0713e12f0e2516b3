"""A real directory tree with symlinks pointing in, out and round, for the path rules."""

from __future__ import annotations

import os
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
