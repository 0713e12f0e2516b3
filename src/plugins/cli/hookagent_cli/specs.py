"""``--tool MODULE:FUNCTION`` and ``--plugin MODULE[:NAME]``: tools and plugins for one command.

The current directory is searched first, as ``python -m`` does, so a ``tools.py`` beside you
works without installing it. Importing runs the module's code: name only modules you trust.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import SpecAttributeNotFound, SpecImportFailed, SpecModuleNotFound, SpecNotCallable


def _import(option: str, spec: str, module_name: str) -> Any:
    if not module_name or any(not part.isidentifier() for part in module_name.split(".")):
        raise SpecModuleNotFound(option, spec, f"{module_name!r} is not a module name")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise SpecModuleNotFound(
                option, spec, f"no module named {missing!r} (not installed, not on PYTHONPATH)"
            ) from None
        raise SpecImportFailed(
            option, spec, f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    except Exception as exc:
        raise SpecImportFailed(
            option, spec, f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def _attribute(option: str, spec: str, module: Any, name: str) -> Any:
    value: Any = module
    for part in name.split("."):
        if not part.isidentifier() or not hasattr(value, part):
            raise SpecAttributeNotFound(
                option, spec, f"module {module.__name__!r} has no attribute {name!r}"
            )
        value = getattr(value, part)
    return value


def load_tool(spec: str) -> Callable[..., Any]:
    """``MODULE:FUNCTION`` -> the function (the kernel turns it into a tool)."""
    module_name, sep, name = spec.partition(":")
    if not sep or not name:
        raise SpecAttributeNotFound("--tool", spec, "expected MODULE:FUNCTION, e.g. mytools:search")
    value = _attribute("--tool", spec, _import("--tool", spec, module_name), name)
    if not callable(value) or isinstance(value, type):
        raise SpecNotCallable(
            "--tool", spec, f"{name!r} is not a function (it is {type(value).__name__})"
        )
    return value  # type: ignore[no-any-return]


def load_plugin(spec: str) -> object:
    """``MODULE`` (the module is the plugin) or ``MODULE:NAME`` (an object in it)."""
    module_name, sep, name = spec.partition(":")
    module = _import("--plugin", spec, module_name)
    if not sep:
        return module
    if not name:
        raise SpecAttributeNotFound("--plugin", spec, "expected MODULE or MODULE:NAME")
    return _attribute("--plugin", spec, module, name)


def load_tools(specs: Sequence[str]) -> list[Callable[..., Any]]:
    return [load_tool(s) for s in specs]


def load_plugins(specs: Sequence[str]) -> list[object]:
    return [load_plugin(s) for s in specs]
