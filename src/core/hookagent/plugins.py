"""One plugin manager per agent configuration, and safe entry-point loading.

pluggy's own ``load_setuptools_entrypoints`` lets one broken plugin crash the host. Here each
entry point of the ``hookagent`` group is loaded in its own try: a failure is recorded (name,
distribution, version, cause) and skipped, unless strict mode is on.

Environment:
  HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD=1   load no entry points (tests, minimal hosts)
  HOOKAGENT_BLOCKED_PLUGINS=a,b         skip these entry-point names
  HOOKAGENT_STRICT_PLUGINS=1            a plugin that fails to load is an error
  HOOKAGENT_TRACE_HOOKS=1               log every hook call and result (logger hookagent.hooks)
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from . import hookspecs
from .errors import PluginLoadError, PluginValidationError

if TYPE_CHECKING:
    import importlib.metadata as md

ENTRY_POINT_GROUP = "hookagent"
log = logging.getLogger("hookagent.plugins")
trace_log = logging.getLogger("hookagent.hooks")


@attrs.frozen
class PluginInfo:
    """One entry point: loaded, blocked, or failed with a reason."""

    name: str
    distribution: str | None
    version: str | None
    value: str
    status: str  # "loaded" | "failed" | "blocked"
    error: str | None = None


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


@functools.cache
def _entry_points() -> tuple[md.EntryPoint, ...]:
    # scanning installed distributions costs milliseconds: do it once per process, and
    # import importlib.metadata (~20 ms, with email and zipfile) only when plugins are loaded
    import importlib.metadata as md

    return tuple(md.entry_points(group=ENTRY_POINT_GROUP))


class HookagentPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers what it loaded and what failed."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.plugin_infos: list[PluginInfo] = []
        self.monitors = 0
        """How many hook-call monitors are active (``HookRecorder``, tracing)."""
        self.generation = 0
        """Bumped on every register/unregister and monitor change, so that callers may cache
        what they derive from the implementations."""
        # historic: every plugin registered from now on may add its own hook specs
        self.hook.hookagent_add_hookspecs.call_historic(kwargs={"pluginmanager": self})

    def add_hookcall_monitoring(self, before: Any, after: Any) -> Any:
        """pluggy's monitoring; also tells the kernel that hook calls are being watched, so
        that a hook with no implementations is still called for the monitor to see."""
        self.monitors += 1
        self.generation += 1
        undo = super().add_hookcall_monitoring(before, after)

        def undo_and_count() -> None:
            undo()
            self.monitors -= 1
            self.generation += 1

        return undo_and_count

    def register(self, plugin: object, name: str | None = None) -> str | None:
        self.generation += 1
        try:
            return super().register(plugin, name)
        except PluginValidationError:
            raise
        except pluggy.PluginValidationError as exc:
            raise _ours(exc) from exc

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        self.generation += 1
        return super().unregister(plugin, name)

    def check_pending(self) -> None:
        """A ``hookagent_*`` implementation that no specification knows is an error."""
        try:
            super().check_pending()
        except PluginValidationError:
            raise
        except pluggy.PluginValidationError as exc:
            raise _ours(exc) from exc

    @property
    def failed(self) -> list[PluginInfo]:
        return [p for p in self.plugin_infos if p.status == "failed"]

    def load_entry_points(self, *, strict: bool = False, blocked: Iterable[str] = ()) -> None:
        blocked = set(blocked)
        for ep in _entry_points():
            dist = ep.dist.name if ep.dist else None
            version = ep.dist.version if ep.dist else None
            if ep.name in blocked:
                self.plugin_infos.append(PluginInfo(ep.name, dist, version, ep.value, "blocked"))
                self.set_blocked(ep.name)
                continue
            if self.get_plugin(ep.name) is not None or self.is_blocked(ep.name):
                continue
            try:
                plugin = ep.load()
                self.register(plugin, name=ep.name)
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                info = PluginInfo(ep.name, dist, version, ep.value, "failed", reason)
                self.plugin_infos.append(info)
                msg = (
                    f"plugin {ep.name!r} from distribution {dist} {version} failed to load: "
                    f"{reason}"
                )
                if strict:
                    raise PluginLoadError(msg) from exc
                log.warning("%s (skipped; set HOOKAGENT_STRICT_PLUGINS=1 to fail)", msg)
                continue
            self.plugin_infos.append(PluginInfo(ep.name, dist, version, ep.value, "loaded"))

    def trace_hook_calls(self) -> None:
        def before(hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
            names = [i.plugin_name for i in impls]
            trace_log.info("hook %s -> %s args=%s", hook_name, names, sorted(kwargs))

        def after(outcome: Any, hook_name: str, impls: Sequence[Any], kwargs: Any) -> None:
            trace_log.info("hook %s returned %r", hook_name, outcome.get_result())

        self.add_hookcall_monitoring(before, after)


def _ours(exc: pluggy.PluginValidationError) -> PluginValidationError:
    found = re.search(r"'(hookagent_\w+)'", str(exc))
    return PluginValidationError(exc.plugin, str(exc), hook=found.group(1) if found else None)


def create_plugin_manager(
    plugins: Iterable[object] = (),
    *,
    autoload: bool | None = None,
    strict: bool | None = None,
    blocked: Iterable[str] | None = None,
    trace: bool | None = None,
) -> HookagentPluginManager:
    """A fresh manager: explicit plugins first, then (unless disabled) the entry points.

    Every argument left as None falls back to its environment variable. A misspelled
    ``hookagent_*`` implementation raises ``pluggy.PluginValidationError`` (``check_pending``).
    """
    pm = HookagentPluginManager()
    if autoload is None:
        autoload = not _flag("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD")
    if strict is None:
        strict = _flag("HOOKAGENT_STRICT_PLUGINS")
    if blocked is None:
        raw = os.environ.get("HOOKAGENT_BLOCKED_PLUGINS", "")
        blocked = [b.strip() for b in raw.split(",") if b.strip()]
    if trace is None:
        trace = _flag("HOOKAGENT_TRACE_HOOKS")
    blocked = list(blocked)
    for name in blocked:
        pm.set_blocked(name)
    for plugin in plugins:
        plugin_name = getattr(plugin, "__name__", None)
        if isinstance(plugin_name, str) and pm.is_blocked(plugin_name):
            continue
        pm.register(plugin)
    if autoload:
        pm.load_entry_points(strict=strict, blocked=blocked)
    if trace:
        pm.trace_hook_calls()
    pm.check_pending()
    return pm
