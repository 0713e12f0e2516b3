"""The pytest plugin's fixtures, used as a plugin author would."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import RuntimeContext, hookimpl
from hookagent.testing import HookRecorder, ScriptedModel, tool_call

pytestmark = pytest.mark.anyio


class Shout:
    @hookimpl
    def hookagent_register_tools(self, register: Any) -> None:
        def shout(text: str) -> str:
            """Upper-case a text."""
            return text.upper()

        register(shout)


async def test_fixtures_isolate_and_record(
    register_plugin: Any,
    agent_config: Any,
    scripted_model: ScriptedModel,
    hook_recorder: HookRecorder,
    hookagent_pm: Any,
) -> None:
    assert hookagent_pm.plugin_infos == []  # autoload is off: nothing installed leaks in
    register_plugin(Shout())
    scripted_model.queue(tool_call("shout", text="hi"), "done")
    reply = await agent_config().build().call("go", RuntimeContext(user_id="u", session_id="s"))
    assert reply.text == "done"
    assert scripted_model.requests[1].messages[-1].tool_results[0].text == "HI"
    names = hook_recorder.names()
    assert "hookagent_register_tools" in names and "hookagent_state_loaded" in names
    assert hook_recorder.named("hookagent_register_tools")[0].plugins == (
        hookagent_pm.get_name(next(p for p in hookagent_pm.get_plugins() if isinstance(p, Shout))),
    )
    scripted_model.assert_all_used()


async def test_each_test_gets_a_fresh_manager(hookagent_pm: Any) -> None:
    assert not any(isinstance(p, Shout) for p in hookagent_pm.get_plugins())
