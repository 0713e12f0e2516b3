"""The trust boundary: the contract's mutators are never offered to the model, not even when
a plugin or the configuration tries to register one as a tool."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from hookagent import (
    AgentConfig,
    ConfigurationError,
    InMemoryAgentStateStore,
    RuntimeContext,
    hookimpl,
)
from hookagent.errors import ToolDefinitionError
from hookagent.testing import ScriptedModel, tool_call
from hookagent.tools import Tool
from hookagent_tasks import (
    TaskAdmin,
    TasksOptionsError,
    TrustedFunctionAsTool,
    begin_task,
    contract,
    decide,
    invalidate_subject,
    is_trusted,
    record_verification,
    run_verification,
    set_subject_version,
    trusted,
)
from hookagent_tasks.guard import refuse_trusted

CONTRACT = (
    "begin_task",
    "decide",
    "set_subject_version",
    "invalidate_subject",
    "record_verification",
)
PARAMS = {
    "type": "object",
    "properties": {"requirement_id": {"type": "string"}},
    "required": [],
    "additionalProperties": False,
}


def as_tool(func: Any, name: str = "approve") -> Tool:
    """A Tool object built by hand: the way around the kernel's signature-derived schema."""
    return Tool(name, "approve a requirement", PARAMS, func)


class Registers:
    def __init__(self, tool: Any) -> None:
        self.tool = tool

    @hookimpl
    def hookagent_register_tools(self, register: Any) -> None:
        register(self.tool)


def wrapped_decide() -> Any:
    @functools.wraps(decide)
    def approve(*args: Any, **kwargs: Any) -> Any:
        return decide(*args, **kwargs)

    return approve


class CallableVerifier:
    @trusted
    def __call__(self, requirement_id: str) -> str:
        return requirement_id


def candidates() -> dict[str, Any]:
    config = AgentConfig(
        model=ScriptedModel(), autoload_plugins=False, state_store=InMemoryAgentStateStore()
    )
    admin = TaskAdmin(config.build())
    return {
        "contract.decide": decide,
        "contract.begin_task": begin_task,
        "contract.set_subject_version": set_subject_version,
        "contract.invalidate_subject": invalidate_subject,
        "contract.record_verification": record_verification,
        "admin.decide (bound)": admin.decide,
        "admin.begin_task_sync (bound)": admin.begin_task_sync,
        "admin.record_verification_sync": admin.record_verification_sync,
        "TaskAdmin.write_todos (function)": TaskAdmin.write_todos,
        "run_verification": run_verification,
        "partial(decide)": functools.partial(decide, status="CONFIRMED"),
        "partial(partial(bound))": functools.partial(functools.partial(admin.decide, "ann")),
        "functools.wraps(decide)": wrapped_decide(),
        "callable object": CallableVerifier(),
    }


@pytest.mark.parametrize("label", sorted(candidates()))
def test_a_plugin_registering_a_trusted_function_is_refused(
    label: str, make_config: Callable[..., AgentConfig]
) -> None:
    model = ScriptedModel([tool_call("approve", requirement_id="R1")])
    config = make_config(model, plugins=[Registers(as_tool(candidates()[label]))])
    with pytest.raises(
        TrustedFunctionAsTool, match="tool\\(s\\) 'approve' would offer the trusted task contract"
    ) as info:
        config.build()
    assert isinstance(info.value, ConfigurationError)
    assert model.requests == []  # the model was never asked anything


def test_the_configuration_tools_are_checked_too(make_config: Callable[..., AgentConfig]) -> None:
    config = make_config(tools=[as_tool(wrapped_decide(), "yes")])
    with pytest.raises(TrustedFunctionAsTool, match="'yes'"):
        config.build()


@pytest.mark.parametrize("func", [decide, begin_task, record_verification])
def test_registering_the_function_itself_fails_anyway(
    func: Any, make_config: Callable[..., AgentConfig]
) -> None:
    """Its parameters (a TasksContext) have no JSON schema: the kernel refuses it first."""
    with pytest.raises((ToolDefinitionError, ConfigurationError)):
        make_config(plugins=[Registers(func)]).build()


@pytest.mark.anyio
async def test_the_model_only_ever_sees_the_two_model_tools(
    make_config: Callable[..., AgentConfig],
) -> None:
    model = ScriptedModel(
        [
            tool_call("todo_write", todos=[{"content": "a", "status": "pending"}]),
            tool_call("decide", requirement_id="R1"),
            "done",
        ]
    )
    agent = make_config(model, tool_groups=["*"]).build()
    await agent.call("go", RuntimeContext(user_id="u", session_id="s"))
    for request in model.requests:
        names = {t.name for t in request.tools}
        assert names == {"todo_write", "task_requirement_propose"}
        assert not names & set(CONTRACT)
    [result] = [m for m in model.requests[2].messages if m.role == "tool"][-1].tool_results
    assert result.state == "error" and "unknown tool 'decide'" in result.text


def test_is_trusted_walks_wrappers_but_not_ordinary_functions() -> None:
    for label, func in candidates().items():
        assert is_trusted(func), label
    assert not is_trusted(len) and not is_trusted(lambda: 1) and not is_trusted(None)
    assert not is_trusted(contract.check_revision) and not is_trusted(contract.propose_requirement)
    assert not is_trusted(functools.partial(print, "x"))
    refuse_trusted({"ok": as_tool(print)})  # nothing to refuse


def test_bad_options_refuse_the_configuration(make_config: Callable[..., AgentConfig]) -> None:
    for options, match in (
        ({"shwo": []}, r"unknown key\(s\) \['shwo'\]"),
        ({"show": "todos"}, "must be a list of"),
        ({"show": ["todos", "plans"]}, r"\['plans'\] not among"),
        ({"grounding": 3}, "must be true, false or a string"),
        ({"project": "yes"}, "must be true or false"),
    ):
        with pytest.raises(TasksOptionsError, match=match) as info:
            make_config(plugin_options={"tasks": options}).build()
        assert isinstance(info.value, ConfigurationError)
