"""The demo's deterministic digest of a summary request: labelled, chained, bounded."""

from __future__ import annotations

import pytest
from hookagent import SUMMARY, ModelError, ModelRequest, ModelResponse, Msg, RuntimeContext
from hookagent_model_demo import DemoModel
from hookagent_model_demo.digest import LABEL, MAX_REQUESTS, digest

TRANSCRIPT = """## Messages to summarise
### user
What's the weather in Lisbon?
### assistant
[demo model] Calling get_weather(city='Lisbon').
[tool call get_weather {"city":"Lisbon"} id=demo_1]
### tool
[tool result get_weather success id=demo_1]
Lisbon: 20°C, sunny
### assistant
[demo model] get_weather says: Lisbon: 20°C, sunny
### user (ann)
count to 3 slowly
please"""


def test_a_transcript_is_digested():
    assert digest(TRANSCRIPT).splitlines() == [
        LABEL,
        "Messages summarised so far: 5.",
        "Tools used: get_weather x1.",
        "Latest user requests:",
        "- What's the weather in Lisbon?",
        "- count to 3 slowly",
    ]


def test_the_previous_digest_is_folded_in_and_the_size_stays_bounded():
    text = digest(TRANSCRIPT)
    for n in range(30):
        chained = f"## Previous summary\n{text}\n\n## Messages to summarise\n### user\nask {n}\n"
        text = digest(chained)
    lines = text.splitlines()
    assert lines[1] == f"Messages summarised so far: {5 + 30}."
    assert lines[2] == "Tools used: get_weather x1."
    assert lines[4:] == [f"- ask {n}" for n in range(30 - MAX_REQUESTS, 30)]
    assert digest(chained) == text  # deterministic


def test_any_other_text_is_one_message():
    assert digest("just some words").splitlines()[1:] == [
        "Messages summarised so far: 1.",
        "Tools used: none.",
        "Latest user requests:",
        "- just some words",
    ]


# ------------------------------------------------------------------ through the model


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False])
async def test_a_summary_request_gets_the_digest(stream: bool) -> None:
    model = DemoModel(delay=0, stream=stream)
    request = ModelRequest([Msg.user(TRANSCRIPT)], system="Summarise.", purpose=SUMMARY)
    items = [item async for item in model.stream(request, RuntimeContext())]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.message.text == digest(TRANSCRIPT)
    assert response.message.text.startswith("[demo summary]") and not response.message.tool_uses
    assert (await model.generate(request, RuntimeContext())).message.text == digest(TRANSCRIPT)
    # the same text as a reasoning request is answered by the rules, not digested
    plain = await model.generate(ModelRequest([Msg.user(TRANSCRIPT)]), RuntimeContext())
    assert plain.message.text.startswith("[demo model]")


def test_the_declared_window() -> None:
    assert DemoModel().context_window == 32_768
    assert DemoModel(context_window=8_000).context_window == 8_000
    for bad in (0, True, "big"):
        with pytest.raises(ModelError, match="context_window must be an int >= 1"):
            DemoModel(context_window=bad)  # type: ignore[arg-type]
