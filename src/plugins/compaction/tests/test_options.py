"""Options: defaults, derived triggers, and every bad value refused with its name."""

from __future__ import annotations

import pytest
from hookagent_compaction.errors import CompactionOptionsError
from hookagent_compaction.options import READ_OFFLOADED, CompactionOptions


def test_defaults():
    o = CompactionOptions.parse({})
    assert (o.trigger_messages, o.trigger_tokens, o.keep_messages, o.keep_tokens) == (
        50,
        None,
        20,
        None,
    )
    assert o.offload_chars == 80_000 and o.offload_preview_chars == 2_000
    assert o.offload_exclude == {READ_OFFLOADED}  # never offloads its own reads
    off = CompactionOptions.parse(None)  # a configuration that does not name the plugin
    assert (off.enabled, off.offload_chars) == (False, None) and o.enabled


@pytest.mark.anyio
async def test_an_agent_that_does_not_name_the_plugin_is_never_compacted() -> None:
    from hookagent import AgentConfig, InMemoryAgentStateStore, RuntimeContext
    from hookagent.testing import ScriptedModel

    model = ScriptedModel(default="ok")
    store = InMemoryAgentStateStore()
    for options in ({}, {"compaction": {}}):  # past the default trigger of 50 messages
        agent = AgentConfig(model=model, state_store=store, plugin_options=options).build()
        session = f"s{len(options)}"
        for i in range(27):
            await agent.call(f"m{i}", RuntimeContext(user_id="u", session_id=session))
        kept = len((await agent.get_agent_state("u", session)).context)
        if options:
            assert kept < 54  # named, with the defaults: compacted
        else:
            assert kept == 54  # installed (autoloaded) but not named: untouched


def test_token_trigger_comes_from_the_model_window():
    o = CompactionOptions.parse({})
    assert o.trigger_tokens_for(None) == 160_000
    assert o.trigger_tokens_for(128_000) == 108_000
    assert o.trigger_tokens_for(8_192) == 4_096  # a small window: at least half of it
    assert CompactionOptions.parse({"trigger_tokens": 5_000}).trigger_tokens_for(128_000) == 5_000


def test_keep_tokens_alone_keeps_by_tokens_only():
    o = CompactionOptions.parse({"keep_tokens": 3_000})
    assert o.keep_messages is None and o.keep_tokens == 3_000
    both = CompactionOptions.parse({"keep_tokens": 3_000, "keep_messages": 10})
    assert both.keep_messages == 10 and both.keep_tokens == 3_000


def test_exclusions_are_a_set_with_read_offloaded():
    o = CompactionOptions.parse({"offload_exclude": ["read_file", "grep"]})
    assert o.offload_exclude == {"read_file", "grep", READ_OFFLOADED}


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({"trigger_messages": 0}, "trigger_messages must be a positive int or None"),
        ({"trigger_messages": True}, "trigger_messages"),
        ({"keep_messages": "20"}, "keep_messages"),
        ({"keep_messages": 50}, r"keep_messages \(50\) must be below trigger_messages \(50\)"),
        ({"keep_messages": None}, "needs keep_messages or keep_tokens"),
        ({"summary_max_tokens": None}, "summary_max_tokens must be a positive int"),
        ({"offload_chars": -1}, "offload_chars"),
        ({"offload_preview_chars": -1}, "offload_preview_chars must be an int >= 0"),
        ({"offload_chars": 1000, "offload_preview_chars": 500}, "offload_preview_chars .500."),
        ({"offload_exclude": "read_file"}, "offload_exclude must be a list"),
        ({"offload_exclude": ["", 3]}, "non-names"),
        ({"summary_model": "demo"}, "summary_model must be a model object"),
        ({"summary_instructions": "  "}, "summary_instructions"),
        ({"enabled": 1}, "enabled must be True or False"),
        ({"triger_messages": 3}, r"unknown compaction option\(s\) triger_messages; known: "),
    ],
)
def test_bad_options_are_refused_by_name(raw, match):
    with pytest.raises(CompactionOptionsError, match=match):
        CompactionOptions.parse(raw)


def test_options_must_be_a_dict():
    with pytest.raises(CompactionOptionsError, match="must be a dict, got list"):
        CompactionOptions.parse([("trigger_messages", 3)])  # type: ignore[arg-type]


def test_token_limits_are_checked_against_the_effective_trigger():
    o = CompactionOptions.parse({"keep_tokens": 150_000})
    o.check_tokens(160_000)
    with pytest.raises(CompactionOptionsError, match=r"keep_tokens \(150000\) must be below"):
        o.check_tokens(108_000)
    with pytest.raises(CompactionOptionsError, match="summary_max_tokens"):
        CompactionOptions.parse({"summary_max_tokens": 5_000}).check_tokens(4_096)
