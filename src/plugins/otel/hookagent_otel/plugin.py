"""The ``otel`` plugin: an ``OtelPlugin`` instance, or this module as the entry point.

The entry point uses the global tracer and meter providers (whatever the application
configures with the OpenTelemetry SDK; nothing is recorded until it does) and options from
the environment. Pass ``OtelPlugin(...)`` in ``AgentConfig(plugins=[...])`` to choose
providers or options: it is registered as ``otel``, so the entry point steps aside.

OpenTelemetry is imported when the first ``OtelPlugin`` is made (the entry point's on the
first hook call), not by discovery, which imports this module in every process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookagent.hookspecs import hookimpl
from hookagent.relay import Middleware

from .options import OtelOptions

if TYPE_CHECKING:
    from hookagent.context import RuntimeContext
    from hookagent.events import RunEvent
    from hookagent.state import AgentState
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

NAME = "otel"


class OtelPlugin:
    """Traces, metrics and log correlation for every run of the configurations it is in.

    ``record_content`` / ``record_user_id``: see ``OtelOptions`` (both off by default).
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        record_content: bool = False,
        record_user_id: bool = False,
        max_content_chars: int = 16_384,
        options: OtelOptions | None = None,
    ) -> None:
        from .calls import MODEL_ORDER, TOOL_ORDER, make_model_middleware, make_tool_middleware
        from .telemetry import Telemetry

        if options is None:
            options = OtelOptions(record_content, record_user_id, max_content_chars)
        self.__name__ = NAME
        self.telemetry = Telemetry(options, tracer_provider, meter_provider)
        self._model = Middleware(make_model_middleware(self.telemetry), order=MODEL_ORDER)
        self._tool = Middleware(make_tool_middleware(self.telemetry), order=TOOL_ORDER)

    @property
    def options(self) -> OtelOptions:
        return self.telemetry.options

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.telemetry.on_event(event)

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        return self._model

    @hookimpl
    def hookagent_wrap_tool_call(self) -> Middleware:
        return self._tool

    @hookimpl
    def hookagent_before_persist(
        self, state: AgentState, ctx: RuntimeContext, outcome: str
    ) -> None:
        self.telemetry.before_persist(ctx, outcome)

    @hookimpl
    def hookagent_after_persist(self, state: AgentState, ctx: RuntimeContext, version: int) -> None:
        self.telemetry.after_persist(ctx, version)


_default: OtelPlugin | None = None


def default_plugin() -> OtelPlugin:
    """The entry point's instance (global providers, options from the environment)."""
    global _default
    if _default is None:
        _default = OtelPlugin(options=OtelOptions.from_env())
    return _default


@hookimpl
def hookagent_on_run_event(event: RunEvent) -> None:
    default_plugin().telemetry.on_event(event)


@hookimpl
def hookagent_wrap_model_call() -> Any:
    return default_plugin().hookagent_wrap_model_call()


@hookimpl
def hookagent_wrap_tool_call() -> Any:
    return default_plugin().hookagent_wrap_tool_call()


@hookimpl
def hookagent_before_persist(state: AgentState, ctx: RuntimeContext, outcome: str) -> None:
    default_plugin().telemetry.before_persist(ctx, outcome)


@hookimpl
def hookagent_after_persist(state: AgentState, ctx: RuntimeContext, version: int) -> None:
    default_plugin().telemetry.after_persist(ctx, version)
