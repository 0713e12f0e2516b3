"""The second process of ``test_processes.py``: the same session, its own interpreter.

It loads the session from the JSON-file store, tries the write tool (plan mode must still be
active: the tool is denied), writes the plan and exits plan mode, and prints what it saw.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hookagent import AgentConfig, RuntimeContext, tool
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import plugin as plan_mode_plugin
from hookagent_store_jsonfile import LocalJsonFileStore
from workspace_double import WorkspacePlugin


@tool(read_only=False)
def write_file(path: str, text: str) -> str:
    """Write a file."""
    raise AssertionError("the write tool ran in plan mode")


def main() -> None:
    state_dir, workspace_dir, session = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    model = ScriptedModel(
        [
            tool_call("write_file", path="app.toml", text="port=2"),  # ends the first call
            tool_call("plan_write", content="1. edit app.toml\n2. restart"),
            tool_call("plan_exit"),
            "plan presented",
        ]
    )
    config = AgentConfig(
        model=model,
        tools=[write_file],
        tool_groups=["plan-mode"],
        plugins=[plan_mode_plugin, WorkspacePlugin(workspace_dir)],
        autoload_plugins=False,
        state_store=LocalJsonFileStore(state_dir),
    )
    agent = config.build()
    ctx = RuntimeContext(user_id="ann", session_id=session)
    first = agent.call_sync("write it now", ctx)
    second = agent.call_sync("then plan", ctx.derive(run_id=None))
    denied = [  # the second call's first request shows the model the denial
        b.state
        for m in model.requests[1].messages
        for b in m.tool_results
        if b.name == "write_file"
    ]
    banner = "<plan_mode>" in (model.requests[0].system or "")
    print(
        json.dumps(
            {
                "first": str(first.metadata["generate_reason"]),
                "denied": denied,
                "banner": banner,
                "second": second.text,
            }
        )
    )
    agent.close_sync()


if __name__ == "__main__":
    main()
