"""Reading and writing state files for ``sessions import`` / ``export``: our format or
AgentScope's, with errors in our own words (a JSON path and what is wrong there)."""

from __future__ import annotations

import json
import re
from typing import Any

from hookagent import AgentState
from hookagent.errors import InvalidState

from .agentscope import from_agentscope, to_agentscope
from .errors import ForeignStateFormat

FORMATS = ("auto", "hookagent", "agentscope")
EXPORTS = ("hookagent", "agentscope", "agentscope-java")
ACCEPTED = (
    "accepted: a hookagent export (JSON with schema_version, from 'hookagent sessions export') "
    "or an AgentScope AgentState (Java 2.0 / Python 2.x JSON, --from agentscope)"
)
_MARKERS = {"sessionId", "userId", "permissionContext", "planModeContext", "tasksContext"}


def detect(doc: Any) -> str | None:
    """ "hookagent", "agentscope" or None (neither)."""
    if not isinstance(doc, dict):
        return None
    if "schema_version" in doc:
        return "hookagent"
    if set(doc) & (_MARKERS | {"toolContext"}):
        return "agentscope"
    if "session_id" in doc and isinstance(doc.get("context"), list):
        return "agentscope"
    return None


def read_state(text: str, source: str, fmt: str = "auto") -> tuple[AgentState, str]:
    """The state a file holds and the format it was read as."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f" (line {exc.lineno} column {exc.colno}: {exc.msg})"
        raise ForeignStateFormat(f"{source} is not JSON{where}; {ACCEPTED}") from None
    found = detect(doc)
    kind = found if fmt == "auto" else fmt
    if kind is None:
        raise ForeignStateFormat(f"{source} is in neither format; {ACCEPTED}")
    if kind == "agentscope":
        if found == "hookagent":
            raise ForeignStateFormat(
                f"{source} is a hookagent export (it has schema_version), not an AgentScope "
                "state: drop --from agentscope"
            )
        doc = from_agentscope(doc)
    elif not isinstance(doc, dict) or "schema_version" not in doc:
        raise ForeignStateFormat(
            f"{source} is not a hookagent export: it has no schema_version "
            f"(an AgentScope state? pass --from agentscope); {ACCEPTED}"
        )
    try:
        return AgentState.from_json(json.dumps(doc)), kind
    except InvalidState as exc:
        told = our_words(str(exc))
        if kind == "agentscope":
            told = f"AgentScope state, once converted: {told}"
        raise type(exc)(told) from None


def write_state(state: AgentState, fmt: str) -> str:
    if fmt == "hookagent":
        return state.to_json()
    doc = to_agentscope(json.loads(state.to_json()), java=fmt == "agentscope-java")
    return json.dumps(doc, ensure_ascii=False)


_LITERAL = re.compile(r"unknown error \((.*) not in literal typing\.Literal\[(.*)\]\)")
_UNKNOWN = re.compile(r"unknown error \((.*)\)")
_EXPECTED = re.compile(r"invalid value for type, expected (.+)")
_EXTRA = re.compile(r"extra fields found \((.*)\)")


def our_words(message: str) -> str:
    """A validation message without the validation library's phrasing.

    cattrs reports ``unknown error (USER not in literal typing.Literal['user', ...]) @
    $.context[0].role``; we say ``$.context[0].role: 'USER' is not one of user, ...``.
    """
    message = message.removeprefix("invalid AgentState: ")
    parts = []
    for part in message.split("; "):
        text, sep, path = part.rpartition(" @ ")
        if not sep:
            text, path = part, ""
        parts.append(_one(text.strip(), path.strip()))
    out = "; ".join(parts)
    if "typing." in out or "unknown error" in out:  # a phrase the rules above do not know
        out = re.sub(r"typing\.\w+\[[^\]]*\]", "the expected values", out)
        out = out.replace("unknown error ", "")
    return out


def _one(text: str, path: str) -> str:
    at = path or "$"
    literal = _LITERAL.fullmatch(text)
    if literal:
        choices = ", ".join(c.strip().strip("'\"") for c in literal.group(2).split(","))
        return f"{at}: {literal.group(1)!r} is not one of {choices}"
    if text == "required field missing":
        return f"{at} is missing"
    expected = _EXPECTED.fullmatch(text)
    if expected:
        return f"{at} should be of type {expected.group(1)}"
    extra = _EXTRA.fullmatch(text)
    if extra:
        return f"{at} has fields this schema does not know: {extra.group(1)}"
    unknown = _UNKNOWN.fullmatch(text)
    if unknown:
        text = unknown.group(1)
    return f"{at}: {text}" if path else text
