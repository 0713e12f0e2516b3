"""The plugin in a real agent: decisions, suspension, answers, events, seeding, options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hookagent_permissions.plugin as permissions
import pytest
from hookagent import (
    AgentConfig,
    Approve,
    ConfigurationError,
    InMemoryAgentStateStore,
    Msg,
    Reject,
    RuntimeContext,
    hookimpl,
    tool,
)
from hookagent.testing import ScriptedModel, tool_call
from hookagent_permissions import admin
from hookagent_permissions.errors import InvalidPermissionOptions
from hookagent_permissions.section import SECTION, from_json

RUNS: list[str] = []


def deploy(env: str) -> str:
    """Deploy the service."""
    RUNS.append(env)
    return f"deployed to {env}"


@tool(read_only=True)
def status() -> str:
    """Read the status."""
    return "all green"


def shell(command: str) -> str:
    """Run a command."""
    RUNS.append(command)
    return f"ran {command}"


class Events:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl
    def hookagent_on_run_event(self, event: Any) -> None:
        if event.kind == "permission_decision":
            self.seen.append(event)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


def make(
    steps: list[Any], options: dict[str, Any] | None = None, store: Any = None, **extra: Any
) -> tuple[Any, ScriptedModel, Events]:
    model = ScriptedModel(steps, default="done")
    events = Events()
    config = AgentConfig(
        model=model,
        tools=[deploy, status, shell],
        plugins=[permissions, events],
        plugin_options={"permissions": options if options is not None else {}},
        state_store=store or InMemoryAgentStateStore(),
        autoload_plugins=False,
        **extra,
    )
    return config.build(), model, events


CTX = RuntimeContext(user_id="ann", session_id="ops")


def results(model: ScriptedModel) -> list[tuple[str, str]]:
    last = model.requests[-1].messages
    return [(b.state, b.output[0].text) for m in last for b in m.tool_results]  # type: ignore[attr-defined]


def test_a_read_only_tool_runs_and_the_decision_is_an_event() -> None:
    agent, model, events = make([tool_call("status"), "fine"])
    reply = agent.call_sync("how are we?", CTX)
    assert reply.text == "fine"
    assert results(model) == [("success", "all green")]
    [event] = events.seen
    assert event.data["tool"] == "status" and event.data["decision"] == "allow"
    assert event.data["source"] == "mode" and event.data["rule"] is None
    assert event.run_id == reply.metadata.get("run_id", event.run_id)


def test_deny_names_the_rule_and_its_source_to_the_model() -> None:
    options = {
        "rules": [
            {
                "tool_name": "shell",
                "behavior": "deny",
                "rule_content": "command:rm -rf",
                "source": "policy",
            }
        ]
    }
    agent, _model, events = make([tool_call("shell", command="sudo rm -rf /"), "ok"], options)
    reply = agent.call_sync("clean up", CTX)
    assert reply.metadata["generate_reason"] == "ALL_TOOLS_DENIED"
    state = agent.get_agent_state_sync("ann", "ops")
    [denied] = [b for m in state.context for b in m.tool_results]
    assert denied.state == "denied"
    assert "deny rule shell(command:rm -rf) (source: policy)" in denied.output[0].text
    assert RUNS == []
    assert events.seen[0].data | {"tool_use_id": None} == {
        "tool": "shell",
        "tool_use_id": None,
        "decision": "deny",
        "rule": "shell(command:rm -rf)",
        "behavior": "deny",
        "source": "policy",
        "mode": "default",
        "reason": "deny rule shell(command:rm -rf) (source: policy) matches",
    }


def test_a_denied_result_reaches_the_model_when_another_call_ran() -> None:
    options = {"rules": [{"tool_name": "deploy", "behavior": "deny", "source": "policy"}]}
    step = Msg.assistant([*tool_call("deploy", env="prod").content, *tool_call("status").content])
    agent, model, _ = make([step, "noted"], options)
    assert agent.call_sync("go", CTX).text == "noted"
    [(s1, t1), (s2, t2)] = results(model)
    assert (s1, s2) == ("denied", "success") and "source: policy" in t1 and t2 == "all green"


def test_ask_suspends_with_tool_arguments_and_rule() -> None:
    options = {
        "rules": [
            {
                "tool_name": "deploy",
                "behavior": "ask",
                "rule_content": "arg:/env=prod",
                "source": "ops",
            }
        ]
    }
    agent, _model, events = make([tool_call("deploy", env="prod"), "shipped"], options)
    reply = agent.call_sync("ship it", CTX)
    assert reply.metadata["generate_reason"] == "SUSPENDED"
    assert reply.metadata["suspend_kind"] == "PERMISSION_ASKING"
    [pending] = reply.metadata["pending"]
    assert pending["kind"] == "confirm" and pending["tool"] == "deploy"
    assert pending["data"] == {
        "tool": "deploy",
        "arguments": {"env": "prod"},
        "rule": "deploy(arg:/env=prod)",
        "source": "ops",
        "mode": "default",
        "reason": "ask rule deploy(arg:/env=prod) (source: ops) matches",
    }
    assert "Allow deploy(env='prod')?" in pending["prompt"]
    assert RUNS == [] and events.seen[-1].data["decision"] == "ask"
    done = agent.call_sync(answers=[Approve(pending["tool_use_id"])], ctx=CTX.derive(run_id=None))
    assert done.text == "shipped" and RUNS == ["prod"]
    assert events.seen[-1].data["decision"] == "allow" and events.seen[-1].data["source"] == "user"
    assert events.seen[-1].data["reason"] == "approved by the user"


def test_reject_is_a_denied_result_the_model_reads() -> None:
    agent, model, _ = make([tool_call("deploy", env="prod"), "understood"])
    reply = agent.call_sync("ship it", CTX)
    [pending] = reply.metadata["pending"]
    done = agent.call_sync(
        answers=[Reject(pending["tool_use_id"], "not on a Friday")], ctx=CTX.derive(run_id=None)
    )
    assert done.text == "understood" and RUNS == []
    assert results(model) == [("denied", "not on a Friday")]


def test_approve_and_remember_adds_an_allow_rule_to_the_slot() -> None:
    agent, _, events = make(
        [tool_call("deploy", env="prod"), "one", tool_call("deploy", env="dev"), "two"]
    )
    [pending] = agent.call_sync("ship", CTX).metadata["pending"]
    agent.call_sync(
        answers=[Approve(pending["tool_use_id"], remember=True)], ctx=CTX.derive(run_id=None)
    )
    stored = from_json(agent.get_agent_state_sync("ann", "ops").extensions[SECTION])
    [rule] = stored.allow_rules["deploy"]
    assert (rule.tool_name, rule.rule_content, rule.source) == ("deploy", None, "session")
    assert "remembered" in events.seen[-1].data["reason"]
    again = agent.call_sync("ship dev", CTX)
    assert again.text == "two" and RUNS == ["prod", "dev"]  # ran without asking
    assert events.seen[-1].data["decision"] == "allow" and events.seen[-1].data["rule"] == "deploy"


def test_a_deny_added_while_the_question_waits_wins_over_the_approval() -> None:
    agent, _, _ = make([tool_call("deploy", env="prod"), "stopped"])
    [pending] = agent.call_sync("ship", CTX).metadata["pending"]
    admin.add_rule_sync(agent, CTX, "deploy", "deny", None, "security")
    done = agent.call_sync(answers=[Approve(pending["tool_use_id"])], ctx=CTX.derive(run_id=None))
    assert RUNS == []
    state = agent.get_agent_state_sync("ann", "ops")
    [result] = [b for m in state.context for b in m.tool_results]
    assert result.state == "denied" and "source: security" in result.output[0].text
    assert done.text == "stopped"  # the model read the denial


def test_options_seed_a_new_slot_and_the_slot_wins_after_that() -> None:
    store = InMemoryAgentStateStore()
    agent, _, _ = make([tool_call("deploy", env="x"), "a"], {"mode": "bypass"}, store)
    agent.call_sync("go", CTX)
    assert RUNS == ["x"]
    assert agent.get_agent_state_sync("ann", "ops").extensions[SECTION]["mode"] == "bypass"
    # another configuration on the same store: the slot keeps what it was seeded with
    strict, _, _ = make([tool_call("deploy", env="y"), "b"], {"mode": "explore"}, store)
    strict.call_sync("go", CTX)
    assert RUNS == ["x", "y"]
    # ... while a new slot gets the new defaults
    other = CTX.derive(session_id="fresh")
    strict2, _, _ = make([tool_call("deploy", env="z"), "c"], {"mode": "explore"}, store)
    assert strict2.call_sync("go", other).metadata["generate_reason"] == "ALL_TOOLS_DENIED"


def test_without_options_or_a_section_the_plugin_does_nothing() -> None:
    model = ScriptedModel([tool_call("deploy", env="prod"), "done"])
    events = Events()
    agent = AgentConfig(
        model=model,
        tools=[deploy],
        plugins=[permissions, events],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()
    agent.call_sync("go", CTX)
    assert RUNS == ["prod"] and events.seen == []
    assert SECTION not in agent.get_agent_state_sync("ann", "ops").extensions
    # a slot with a section is decided by it, in any configuration
    admin.set_permission_mode_sync(agent, CTX, "dont_ask")
    model.queue(tool_call("deploy", env="dev"), "x")
    assert agent.call_sync("go", CTX).metadata["generate_reason"] == "ALL_TOOLS_DENIED"
    assert RUNS == ["prod"] and events.seen[-1].data["decision"] == "deny"


def plant(agent: Any, raw: Any) -> None:
    """Write a raw section into the slot behind the plugin's back."""

    async def run() -> None:
        await agent.update_agent_state(
            CTX, "plant", lambda s: s.extensions.__setitem__(SECTION, raw), create=True
        )

    agent.kernel.portal().call(run)


def test_an_old_minimal_section_is_read() -> None:
    store = InMemoryAgentStateStore()
    agent, _, _ = make([tool_call("shell", command="rm -rf /"), "no"], None, store)
    plant(
        agent,
        {"mode": "default", "rules": [{"tool": "shell", "decision": "deny", "pattern": "rm *"}]},
    )
    assert agent.call_sync("go", CTX).metadata["generate_reason"] == "ALL_TOOLS_DENIED"
    assert RUNS == []


def test_a_section_that_cannot_be_read_denies_every_call() -> None:
    store = InMemoryAgentStateStore()
    agent, _, events = make([tool_call("status"), "no"], None, store)
    plant(agent, {"mode": "default", "allow_rules": "everything"})
    assert agent.call_sync("go", CTX).metadata["generate_reason"] == "ALL_TOOLS_DENIED"
    assert "cannot be read" in events.seen[-1].data["reason"]
    assert "permission_context.allow_rules" in events.seen[-1].data["reason"]


def test_an_unknown_tool_is_left_to_the_kernel() -> None:
    agent, model, events = make([tool_call("nope"), "ok"], {"mode": "dont_ask"})
    agent.call_sync("go", CTX)
    assert results(model)[0][0] == "error" and events.seen == []


def test_accept_edits_runs_an_edit_inside_the_working_directory(tmp_path: Path) -> None:
    def write_file(path: str, text: str) -> str:
        """Write a file."""
        RUNS.append(path)
        return "written"

    options = {"mode": "accept_edits", "working_directories": {"w": str(tmp_path)}}
    model = ScriptedModel(
        [
            tool_call("write_file", path="a.txt", text="x"),
            tool_call("write_file", path="../b.txt", text="x"),
            "ok",
        ]
    )
    agent = AgentConfig(
        model=model,
        tools=[write_file],
        plugins=[permissions],
        plugin_options={"permissions": options},
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()
    reply = agent.call_sync("write", CTX)
    assert RUNS == ["a.txt"]  # inside: ran; outside: asks
    assert reply.metadata["pending"][0]["input"] == {"path": "../b.txt", "text": "x"}


def test_bad_options_refuse_the_configuration() -> None:
    with pytest.raises(ConfigurationError, match=r"plugin_options\['permissions'\]: unknown mode"):
        make([], {"mode": "yolo"})
    with pytest.raises(InvalidPermissionOptions, match=r"\['rules'\]\[0\]"):
        make([], {"rules": [{"tool_name": "x", "behavior": "allow", "rule_content": "path:../x"}]})


def test_the_middleware_order_is_declared() -> None:
    mw = permissions.hookagent_wrap_tool_call()
    assert mw.order == 200


def test_remember_in_a_full_slot_runs_the_call_and_adds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookagent_permissions import validate

    monkeypatch.setattr(validate, "MAX_RULES", 1)
    agent, _, events = make([tool_call("deploy", env="prod"), "one"])
    admin.add_rule_sync(agent, CTX, "status", "allow")
    [pending] = agent.call_sync("ship", CTX).metadata["pending"]
    agent.call_sync(
        answers=[Approve(pending["tool_use_id"], remember=True)], ctx=CTX.derive(run_id=None)
    )
    assert RUNS == ["prod"]
    stored = from_json(agent.get_agent_state_sync("ann", "ops").extensions[SECTION])
    assert "deploy" not in stored.allow_rules
    assert events.seen[-1].data["reason"] == "approved by the user"
