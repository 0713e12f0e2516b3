"""The plugin's instruments (names follow the GenAI semantic conventions where one exists).

Attributes are low-cardinality on purpose: agent_id, outcome, error type, tool and model
names; never user_id, session_id or run_id (those are on spans and logs).
"""

from __future__ import annotations

from opentelemetry.metrics import Meter


class Instruments:
    """Counters and histograms, created once per plugin instance."""

    def __init__(self, meter: Meter) -> None:
        self.runs = meter.create_counter(
            "hookagent.runs", unit="{run}", description="Runs ended, by agent and outcome"
        )
        self.run_errors = meter.create_counter(
            "hookagent.run.errors", unit="{run}", description="Failed runs, by error type"
        )
        self.interrupts = meter.create_counter(
            "hookagent.run.interrupts", unit="{run}", description="Interrupted runs, by reason"
        )
        self.run_duration = meter.create_histogram(
            "hookagent.run.duration", unit="s", description="Run latency, by outcome"
        )
        self.model_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Model call latency"
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens per model call"
        )
        self.tool_calls = meter.create_counter(
            "hookagent.tool.calls", unit="{call}", description="Tool calls, by tool and outcome"
        )
        self.tool_duration = meter.create_histogram(
            "hookagent.tool.duration", unit="s", description="Tool call latency"
        )
        self.save_duration = meter.create_histogram(
            "hookagent.state.save.duration", unit="s", description="State save latency"
        )
        self.conflicts = meter.create_counter(
            "hookagent.state.conflicts",
            unit="{save}",
            description="Saves lost to a version conflict",
        )
