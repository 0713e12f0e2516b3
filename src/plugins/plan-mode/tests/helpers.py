"""Small builders shared by the plan-mode tests."""

from __future__ import annotations

from typing import Any

from hookagent import AgentConfig, InMemoryAgentStateStore, Msg, ToolUseBlock, hookimpl, tool
from hookagent.messages import new_id
from hookagent.testing import ScriptedModel
from hookagent_plan_mode import plugin as plan_mode_plugin

WRITES: list[str] = []


@tool(read_only=False)
def write_file(path: str, text: str) -> str:
    """Write a file (a tool that changes things)."""
    WRITES.append(f"{path}={text}")
    return f"wrote {path}"


@tool(read_only=True)
def read_notes() -> str:
    """Read the notes (read-only)."""
    return "notes: the config lives in app.toml"


def calls(*pairs: tuple[str, dict[str, Any]]) -> Msg:
    """One assistant message calling several tools in one step."""
    return Msg.assistant([ToolUseBlock(f"call_{new_id()[:12]}", n, a) for n, a in pairs])


def denied_results(request: Any) -> list[Any]:
    return [b for m in request.messages for b in m.tool_results if b.state == "denied"]


def result_text(block: Any) -> str:
    return "".join(getattr(o, "text", "") for o in block.output)


class Events:
    """Collects every run event of the configurations it is in."""

    __name__ = "test-events"

    def __init__(self) -> None:
        self.events: list[Any] = []

    @hookimpl
    def hookagent_on_run_event(self, event: Any) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]


def config(
    model: ScriptedModel,
    *,
    plugins: tuple[object, ...] = (),
    tools: tuple[Any, ...] = (write_file, read_notes),
    store: Any = None,
    **kwargs: Any,
) -> AgentConfig:
    """A configuration with plan mode (explicitly, entry points off) and its tools enabled."""
    return AgentConfig(
        model=model,
        tools=list(tools),
        tool_groups=kwargs.pop("tool_groups", ["plan-mode"]),
        plugins=[plan_mode_plugin, *plugins],
        autoload_plugins=False,
        state_store=store if store is not None else InMemoryAgentStateStore(),
        **kwargs,
    )
