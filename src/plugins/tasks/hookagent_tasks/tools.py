"""The two model tools: ``todo_write`` and ``task_requirement_propose``.

Both take the session's state from the call's context, never from a parameter, so the model
cannot name another session, a revision or a status it is not allowed to set. Their changes
are saved with the call, like every other change a tool makes to the state.
"""

from __future__ import annotations

from typing import Any

import attrs
from hookagent import RuntimeContext, emit_event
from hookagent.state import AgentState
from hookagent.tools import Tool

from .contract import propose_requirement
from .errors import TasksError
from .model import KINDS, PRIORITIES, SECTION, TASK_STATES
from .options import PLUGIN
from .sections import read, write
from .todos import render_result, replace_todos

TODO_WRITE_DESCRIPTION = (
    "Replace your todo list for this task with the complete list you give (it is not a "
    "patch: include every item you keep). Each item has content, status (pending, "
    "in_progress, completed) and an optional priority (high, medium, low). At most one item "
    "is in_progress. Use it to plan multi-step work and to mark progress as you go; a list "
    "that breaks a rule is refused and nothing changes."
)
PROPOSE_DESCRIPTION = (
    "Propose a requirement of the current task for the application to confirm or reject: "
    "kind CONSTRAINT (a rule the work must respect) or ACCEPTANCE_CRITERION (a check that "
    "shows the work is done), its text, and source_ref saying where it comes from (e.g. the "
    "user's message). A proposal is only a candidate; proposing the same one again changes "
    "nothing."
)

TODO_WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "the whole todo list, in order",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "what to do (one line)"},
                    "status": {"enum": list(TASK_STATES)},
                    "priority": {"enum": list(PRIORITIES)},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}
PROPOSE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"enum": list(KINDS)},
        "text": {"type": "string", "description": "the requirement, one or two sentences"},
        "source_ref": {"type": "string", "description": "where it comes from"},
    },
    "required": ["kind", "text", "source_ref"],
    "additionalProperties": False,
}


def _state(ctx: RuntimeContext, tool: str) -> AgentState:
    state = ctx.agent_state
    if state is None:
        raise TasksError(f"{tool} runs inside an agent call (the context has no session state)")
    return state


async def todo_write(todos: list[dict[str, Any]], ctx: RuntimeContext) -> str:
    """Replace the whole todo list (see ``TODO_WRITE_DESCRIPTION``)."""
    state = _state(ctx, "todo_write")
    # read, rule, write with no await between: atomic even beside a parallel tool call
    new = replace_todos(read(state), todos)
    write(state, new)
    await emit_event(
        ctx,
        "task_changed",
        section=SECTION,
        revision=new.revision,
        change="todos",
        representation="full",
        todos=len(new.tasks),
    )
    return render_result(new)


async def task_requirement_propose(
    kind: str, text: str, source_ref: str, ctx: RuntimeContext
) -> str:
    """Propose a CANDIDATE requirement (see ``PROPOSE_DESCRIPTION``)."""
    state = _state(ctx, "task_requirement_propose")
    before = read(state)
    new, req = propose_requirement(before, kind, text, source_ref)
    if new is before:
        return f"Already proposed as {req.id} ({req.status}); nothing changed."
    write(state, new)
    await emit_event(
        ctx,
        "task_changed",
        section=SECTION,
        revision=new.revision,
        change="requirement_proposed",
        requirement_id=req.id,
    )
    return (
        f"Proposed {req.id} ({req.kind}) as a CANDIDATE: the application decides whether it "
        "is a requirement of this task."
    )


def model_tools() -> list[Tool]:
    """The tools the plugin registers, in the ``tasks`` tool group (not read-only)."""
    todo = Tool.from_function(todo_write, description=TODO_WRITE_DESCRIPTION, group=PLUGIN)
    propose = Tool.from_function(
        task_requirement_propose, description=PROPOSE_DESCRIPTION, group=PLUGIN
    )
    return [
        attrs.evolve(todo, parameters=TODO_WRITE_PARAMETERS, read_only=False),
        attrs.evolve(propose, parameters=PROPOSE_PARAMETERS, read_only=False),
    ]
