"""The demo model's rules: a pure function from the conversation to the next assistant turn.

No randomness and no clock: the same messages and tools always give the same reply, so the
demo and the documentation examples print the same thing everywhere.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import attrs
from hookagent.messages import Msg, ToolResultBlock

from .harness_rules import harness_answer, harness_call, is_view

PREFIX = "[demo model]"
_COUNT = re.compile(r"\bcount(?:ing)?\s+(?:up\s+)?to\s+(\d{1,3})\b", re.IGNORECASE)
_WEATHER = re.compile(
    r"\bweather\b(?:\s+(?:like\s+)?(?:in|for|at)\s+([A-Za-z][A-Za-z .'-]{0,40}))?", re.IGNORECASE
)
_CITIES = ("paris", "london", "berlin", "tokyo", "new york", "madrid", "rome", "lisbon", "oslo")
MAX_RECAP = 5
"""The recap lists the latest requests only (a long session is summarised, not recited)."""
_RECAP = re.compile(r"\b(so far|summar\w*|recap|history|what did i|what have we)\b", re.I)


@attrs.frozen
class Plan:
    """What the model says, and the tool it calls (if any)."""

    text: str
    tool: str | None = None
    arguments: dict[str, object] = attrs.Factory(dict)


def decide(messages: Sequence[Msg], tools: Sequence[str], system: str | None = None) -> Plan:
    """The next turn given the whole history, the names of the tools on offer and the
    request's system prompt (read only by the harness questions, ``harness_rules.py``)."""
    shown = messages
    if messages and is_view(messages[-1]):  # a view a plugin appended, not the user's turn
        messages = messages[:-1]
    if not messages:
        return Plan(f"{PREFIX} Hello. I am a rule-based demo model, not an LLM.")
    last = messages[-1]
    if last.role == "tool":
        return Plan(_answer(last.tool_results))
    text = last.text.strip()
    harness = harness_call(text)
    if harness is not None:
        return _call(*harness, tools)
    answer = harness_answer(text, shown, system)
    if answer is not None:
        return Plan(answer)
    count = _COUNT.search(text)
    if count or "slow" in text.lower():
        n = max(1, min(int(count.group(1)) if count else 5, 100))
        return _call("slow_count", {"n": n}, tools)
    city = _city(text)
    if city is not None:
        return _call("get_weather", {"city": city}, tools)
    if _RECAP.search(text):
        return Plan(_recap(messages[:-1]))
    earlier = len(messages) - 1
    return Plan(
        f"{PREFIX} You said: “{_short(text, 80)}”. I only follow a few rules (I am not an "
        "LLM): ask me about the weather in a city, to count to a number slowly, or what we "
        f"have done so far. This session holds {earlier} earlier message(s)."
    )


def tool_use_id(messages: Sequence[Msg]) -> str:
    """Deterministic and unique within a history: derived from the message that asked."""
    anchor = messages[-1].id if messages else ""
    return f"demo_{zlib.crc32(anchor.encode()):08x}_{len(messages)}"


def _call(tool: str, arguments: dict[str, object], tools: Sequence[str]) -> Plan:
    args = ", ".join(f"{k}={_brief(v)}" for k, v in arguments.items())
    if tool not in tools:
        return Plan(
            f"{PREFIX} I would call {tool}({args}), but this agent offers no such tool "
            f"(tools: {', '.join(tools) or 'none'})."
        )
    return Plan(f"{PREFIX} Calling {tool}({args}).", tool, arguments)


def _brief(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:59] + "…"


def _city(text: str) -> str | None:
    match = _WEATHER.search(text)
    if match and match.group(1):
        return match.group(1).strip(" .?!'").title() or None
    lowered = text.lower()
    for city in _CITIES:
        if re.search(rf"\b{city}\b", lowered):
            return city.title()
    return "Paris" if match else None


def _answer(results: Sequence[ToolResultBlock]) -> str:
    if not results:
        return f"{PREFIX} The tool returned nothing."
    parts = []
    for result in results:
        if result.state == "success":
            parts.append(f"{result.name} says: {' '.join(result.text.splitlines())}")
        else:
            parts.append(f"{result.name} did not succeed ({result.state}): {result.text}")
    return f"{PREFIX} " + " ".join(parts)


def _recap(history: Sequence[Msg]) -> str:
    requests: list[str] = []
    for i, msg in enumerate(history):
        if msg.role != "user":
            continue
        after = history[i + 1 :]
        before = history[i - 1] if i else None
        if before is not None and before.role == "tool" and after and _interrupt_reply(after[0]):
            outcome = "sent to interrupt it"
        else:
            outcome = _outcome(after)
        requests.append(f"{len(requests) + 1}. “{_short(msg.text, 50)}” → {outcome}")
    if not requests:
        return f"{PREFIX} Nothing yet: this is the first message of the session."
    earlier = len(requests) - MAX_RECAP
    shown = "; ".join(requests[-MAX_RECAP:])
    return (
        f"{PREFIX} This session already holds {len(history)} messages. "
        f"Your requests so far: {f'({earlier} earlier not listed) ' if earlier > 0 else ''}"
        f"{shown}."
    )


def _interrupt_reply(msg: Msg) -> bool:
    return msg.role == "assistant" and msg.metadata.get("generate_reason") == "INTERRUPTED"


def _outcome(after: Sequence[Msg]) -> str:
    tools: list[str] = []
    interrupted = False
    for msg in after:
        if msg.role == "user":
            break
        tools += [f"{r.name} {r.state}" for r in msg.tool_results]
        interrupted |= _interrupt_reply(msg) or any(
            r.state == "interrupted" for r in msg.tool_results
        )
    verb = "interrupted" if interrupted else "answered"
    return f"{verb} ({', '.join(tools)})" if tools else verb


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
