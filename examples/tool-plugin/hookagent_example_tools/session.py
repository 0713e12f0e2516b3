"""A tool that reads the conversation it runs in, through its ``RuntimeContext`` parameter."""

from __future__ import annotations

from collections import Counter

from hookagent import RuntimeContext


async def conversation_stats(ctx: RuntimeContext) -> dict[str, object]:
    """Count the messages of this conversation so far, by role.

    The ``ctx`` parameter is annotated ``RuntimeContext``: the kernel passes the call's
    context and leaves the parameter out of the schema the model sees.
    """
    state = ctx.agent_state
    messages = list(state.context) if state is not None else []
    roles = Counter(m.role for m in messages)
    return {"messages": len(messages), "by_role": dict(sorted(roles.items()))}
