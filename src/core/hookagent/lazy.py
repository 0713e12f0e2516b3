"""Lazy re-exports for a package ``__init__`` (PEP 562), so that importing a plugin is cheap.

Plugin discovery imports every installed plugin's entry module, and with it the module's
package ``__init__``, in every process that builds an agent or runs ``hookagent``. A package
that re-exports its store or server classes eagerly makes each of those processes import
SQLAlchemy, redis or FastAPI whether or not it uses them. With ``lazy_exports`` the public
names stay importable (``from pkg import Name``) and their module is imported on first use::

    from typing import TYPE_CHECKING

    from hookagent.lazy import lazy_exports

    if TYPE_CHECKING:  # for type checkers and IDEs; costs nothing at run time
        from .store import MyStore

    __all__ = ["MyStore"]
    __getattr__, __dir__ = lazy_exports(__name__, {"MyStore": ".store"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name in ``names`` is imported from its
    module (relative to ``package`` when it starts with a dot) on first access, then cached
    in the package's namespace so later accesses are plain attribute reads."""
    table = dict(names)

    def __getattr__(name: str) -> Any:
        try:
            module_name = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module_name, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
