"""The standard workload's agent: a stateless scripted model, the ``lookup`` tool, a config.

The model follows the peers' rule exactly: it reads *n* from the last message; after a user
message it answers with one tool call ``lookup(key=n)``, after the tool result with the
200-character final text. So every agent call appends 4 messages and the model works under
concurrency and after a cold resume.
"""

from __future__ import annotations

from typing import Any

from bench_texts import TOOL_NAME, call_id, final_text, parse_n, tool_text, user_text
from hookagent import (
    AgentConfig,
    InMemoryAgentStateStore,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)


def turn(n: int) -> list[Msg]:
    """The 4 messages call *n* appends (what the model and the tool above produce)."""
    return [
        Msg.user(user_text(n)),
        Msg.assistant([ToolUseBlock(call_id(n), TOOL_NAME, {"key": n})]),
        Msg(
            "tool", [ToolResultBlock(call_id(n), TOOL_NAME, (TextBlock(tool_text(n)),), "success")]
        ),
        Msg.assistant(final_text(n)),
    ]


SYSTEM_PROMPT = "You are a benchmark agent. Use the lookup tool, then answer."


class BenchModel:
    """Scripted, stateless, no network: the peers' rule."""

    name = "bench-scripted"

    async def generate(self, request: ModelRequest, ctx: RuntimeContext) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "user":
            n = parse_n(last.text)
            use = ToolUseBlock(call_id(n), TOOL_NAME, {"key": n})
            return ModelResponse(Msg.assistant([use]), stop_reason="tool_use")
        if last.role == "tool":
            n = parse_n(last.tool_results[0].text)
            return ModelResponse(Msg.assistant([TextBlock(final_text(n))]), stop_reason="end_turn")
        raise ValueError(f"scripted model: unexpected last message role {last.role!r}")


async def lookup(key: int) -> str:
    """Look a key up (returns the workload's 200-character tool text)."""
    return tool_text(key)


def open_store_spec(store: str) -> Any:
    """``memory`` -> a fresh in-memory store object; anything else is a store URL."""
    return InMemoryAgentStateStore() if store == "memory" else store


def store_plugins() -> list[Any]:
    """The installed store plugins (entry points named ``store-*``), and nothing else.

    Other installed plugins (example tools with an audit middleware, model providers) would
    add their own hooks to every call; the workload measures the kernel and the store only.
    """
    import importlib.metadata as md
    import sys

    out = []
    for ep in md.entry_points(group="hookagent"):
        if ep.name.startswith("store-"):
            try:
                out.append(ep.load())
            except Exception as exc:  # a half-installed plugin must not stop the others
                print(f"bench: store plugin {ep.name} failed to load: {exc!r}", file=sys.stderr)
    return out


def make_config(
    store: str | Any, *, agent_id: str = "bench", plugins: list[Any] | None = None, **options: Any
) -> AgentConfig:
    """One shared configuration (configure once; the benchmark builds an agent per call)."""
    spec = open_store_spec(store) if isinstance(store, str) else store
    if isinstance(store, str) and store.startswith("postgresql"):
        # the same connection ceiling as every peer's Postgres store (pool 10)
        options.setdefault("state_store_options", {"pool_size": 10, "max_overflow": 0})
    return AgentConfig(
        name="bench",
        agent_id=agent_id,
        model=BenchModel(),
        tools=[lookup],
        state_store=spec,
        system_prompt=SYSTEM_PROMPT,
        plugins=[] if store == "memory" else (store_plugins() if plugins is None else plugins),
        autoload_plugins=False,
        **options,
    )


async def one_call(config: AgentConfig, user_id: str, session_id: str, n: int) -> Msg:
    """Build an agent, make call *n* on the slot, close the agent (what a web request does)."""
    async with config.build() as agent:
        return await agent.call(
            user_text(n), RuntimeContext(user_id=user_id, session_id=session_id)
        )
