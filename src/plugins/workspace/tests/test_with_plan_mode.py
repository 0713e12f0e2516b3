"""Cooperation through the kernel seams only: plan mode keeps its plan in this workspace and
blocks the file tools that change things, lets the read-only ones through; memory sees the
same files. (hookagent-plan-mode and hookagent-memory are test-only dependencies.)"""

from __future__ import annotations

from pathlib import Path

import hookagent_plan_mode.plugin as plan_mode
import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, Msg, RuntimeContext, ToolUseBlock
from hookagent.messages import ToolResultBlock
from hookagent.testing import ScriptedModel, tool_call
from hookagent_memory import MemoryPlugin
from hookagent_workspace import WorkspacePlugin

pytestmark = pytest.mark.anyio


async def test_plan_mode_blocks_write_file_and_keeps_the_plan_in_the_workspace(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            tool_call("plan_enter"),
            Msg.assistant(
                [
                    ToolUseBlock("w1", "write_file", {"path": "app.py", "content": "x = 2\n"}),
                    ToolUseBlock("r1", "list_files", {}),
                ]
            ),
            tool_call("plan_write", content="1. set x = 2"),
            tool_call("plan_exit"),
            "plan ready",
            tool_call("write_file", path="app.py", content="x = 2\n"),
            "done",
        ]
    )
    config = AgentConfig(
        model=model,
        plugins=[WorkspacePlugin(url=str(tmp_path), scope="session"), plan_mode, MemoryPlugin()],
        tool_groups=["workspace", "plan-mode"],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    ctx = RuntimeContext(user_id="ann", session_id="s1")
    root = tmp_path / "sessions" / "ann" / "s1"
    root.mkdir(parents=True)
    (root / "AGENTS.md").write_text("Keep changes small.")
    async with config.build() as agent:
        assert (await agent.call("plan first", ctx)).text == "plan ready"
        assert (await agent.call("go ahead", ctx.derive(run_id=None))).text == "done"
    step = {
        b.id: b for b in model.requests[2].messages[-1].content if isinstance(b, ToolResultBlock)
    }
    assert step["w1"].state == "denied" and "plan mode" in step["w1"].text.lower()
    assert step["r1"].state == "success"
    assert (root / "PLAN.md").read_text().startswith("1. set x = 2")
    assert (root / "app.py").read_text() == "x = 2\n"  # written after plan mode ended
    # memory (order 100) puts AGENTS.md in first, the plan-mode banner (order 400) after it
    system = model.requests[1].system or ""
    assert "Keep changes small." in system and "<plan_mode" in system
    assert system.index("Keep changes small.") < system.index("<plan_mode")
