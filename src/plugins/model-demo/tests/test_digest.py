"""The demo's deterministic digest of a summary request: labelled, chained, bounded."""

from __future__ import annotations

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
