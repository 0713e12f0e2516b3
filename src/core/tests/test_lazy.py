"""``hookagent.lazy.lazy_exports``: a package's names imported on first use, then cached."""

from __future__ import annotations

import sys
import types

import pytest
from hookagent.lazy import lazy_exports


@pytest.fixture
def package(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    pkg = types.ModuleType("lazy_pkg")
    pkg.__path__ = []
    sub = types.ModuleType("lazy_pkg.sub")
    sub.Thing = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lazy_pkg", pkg)
    monkeypatch.setitem(sys.modules, "lazy_pkg.sub", sub)
    getattr_, dir_ = lazy_exports("lazy_pkg", {"Thing": ".sub"})
    pkg.__getattr__ = getattr_  # type: ignore[method-assign]
    pkg.__dir__ = dir_  # type: ignore[method-assign]
    return pkg


def test_a_name_is_imported_on_first_use_and_cached(package: types.ModuleType) -> None:
    assert "Thing" not in vars(package)
    assert "Thing" in dir(package)
    thing = package.Thing
    assert thing is sys.modules["lazy_pkg.sub"].Thing
    assert vars(package)["Thing"] is thing  # later reads are plain attribute reads


def test_an_unknown_name_is_an_attribute_error(package: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="module 'lazy_pkg' has no attribute 'Other'"):
        package.Other  # noqa: B018
