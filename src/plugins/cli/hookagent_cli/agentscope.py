"""AgentScope AgentState JSON (Java 2.0, Python 2.x) to and from our state document.

Pure functions on parsed JSON: ``from_agentscope(doc)`` gives a document ``AgentState``'s
codec reads (``schema_version`` 1); ``to_agentscope(doc)`` turns one of ours back. Keys may be
snake_case (Python) or camelCase (Java). The permission, plan-mode and task sections are kept
as the reference spells them (the harness plugins own them: ``agentscope_sections``); unknown
top-level fields are kept in the extension ``agentscope`` and used again on export; read
caches are dropped. Every problem is an ``AgentScopeFormatError`` naming the JSON
path in the source file.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
from typing import Any

from .agentscope_sections import (
    EXTENSION,
    camel,
    get,
    opt_str,
    permissions_from,
    permissions_to,
    plan_from,
    plan_to,
    snake,
    tasks_from,
    tasks_to,
    want,
)
from .errors import AgentScopeFormatError

SCHEMA_VERSION = 1
ROLES = {"USER": "user", "ASSISTANT": "assistant", "SYSTEM": "system", "TOOL": "tool"}
RESULT_STATES = {
    "finished": "success",
    "success": "success",
    "error": "error",
    "failed": "error",
    "interrupted": "interrupted",
    "denied": "denied",
    "rejected": "denied",
}
EXPORT_STATES = {"success": "finished", "error": "error", "interrupted": "interrupted"}
EXPORT_STATES["denied"] = "denied"
MEDIA = {"image": "image", "audio": "audio", "video": "video", "file": "file"}
READ_CACHES = {"read_cache", "read_file_cache", "file_read_cache", "read_file_state"}
READ_CACHES |= {"file_state_cache", "read_file_timestamps"}
TOP = (
    "session_id",
    "user_id",
    "context",
    "summary",
    "permission_context",
    "plan_mode_context",
    "tasks_context",
    "tool_context",
    "shutdown_interrupted",
)
OUR_EXTENSIONS = "hookagent_extensions"  # where an export keeps our other plugin sections


def fail(path: str, problem: str) -> AgentScopeFormatError:
    return AgentScopeFormatError(path, problem)


# --------------------------------------------------------------------------- import


def from_agentscope(doc: Any) -> dict[str, Any]:
    """An AgentScope AgentState document to one of ours (not yet validated by our codec)."""
    want(doc, dict, "$", "a JSON object (an AgentScope AgentState)")
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    session = get(doc, "session_id")
    out["session_id"] = want(session, str, "$.session_id", "a string (the session id)")
    user = get(doc, "user_id")
    out["user_id"] = "" if user is None else want(user, str, "$.user_id", "a string or null")
    context = get(doc, "context", [])
    want(context, list, "$.context", "a list of messages")
    out["context"] = [message_from(m, f"$.context[{i}]") for i, m in enumerate(context)]
    out["summary"] = opt_str(get(doc, "summary"), "$.summary")
    ext: dict[str, Any] = {}
    perm = get(doc, "permission_context")
    if perm is not None:
        out["permission_context"] = permissions_from(perm, "$.permission_context")
        spelled = get(perm, "mode")
        if isinstance(spelled, str) and spelled != out["permission_context"]["mode"]:
            ext["mode_spelling"] = spelled  # Java's ACCEPT_EDITS: written back on export
    plan = get(doc, "plan_mode_context")
    if plan is not None:
        out["plan_mode_context"] = plan_from(plan, "$.plan_mode_context")
    tasks = get(doc, "tasks_context")
    if tasks is not None:
        out["tasks_context"] = tasks_from(tasks, "$.tasks_context")
    tools = get(doc, "tool_context")
    if tools is not None:
        want(tools, dict, "$.tool_context", "an object")
        groups = want(get(tools, "activated_groups", []), list, "$.tool_context", "a list")
        for i, g in enumerate(groups):
            want(g, str, f"$.tool_context.activated_groups[{i}]", "a string")
        out["tool_context"] = {"activated_groups": list(groups)}
    flag = get(doc, "shutdown_interrupted", False)
    out["shutdown_interrupted"] = want(flag, bool, "$.shutdown_interrupted", "true or false")
    known = set(TOP) | {camel(k) for k in TOP}
    extra = {
        k: v
        for k, v in doc.items()
        if k not in known and snake(k) not in READ_CACHES and k != OUR_EXTENSIONS
    }
    if extra:
        ext["extra"] = extra
    ours = doc.get(OUR_EXTENSIONS)
    if ours is not None:
        for name, value in want(ours, dict, f"$.{OUR_EXTENSIONS}", "an object").items():
            if name in TOP or name in ("schema_version", EXTENSION):
                raise fail(f"$.{OUR_EXTENSIONS}.{name}", "is not a plugin section name")
            out[name] = value
    if ext:
        out[EXTENSION] = ext
    return out


def message_from(msg: Any, path: str) -> dict[str, Any]:
    want(msg, dict, path, "a message object")
    role = want(msg.get("role"), str, f"{path}.role", "a role (USER, ASSISTANT, SYSTEM, TOOL)")
    if role.upper() not in ROLES:
        raise fail(
            f"{path}.role", f"{role!r} is not a role; expected USER, ASSISTANT, SYSTEM or TOOL"
        )
    content = msg.get("content", [])
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}]
    else:
        want(content, list, f"{path}.content", "a string or a list of blocks")
        blocks = [block_from(b, f"{path}.content[{i}]") for i, b in enumerate(content)]
    out: dict[str, Any] = {"role": ROLES[role.upper()], "content": blocks}
    out["name"] = opt_str(msg.get("name"), f"{path}.name")
    if msg.get("id") is not None:
        out["id"] = want(msg["id"], str, f"{path}.id", "a string")
    metadata = msg.get("metadata")
    out["metadata"] = (
        {} if metadata is None else want(metadata, dict, f"{path}.metadata", "an object")
    )
    if msg.get("timestamp") is not None:
        out["timestamp"] = timestamp_from(msg["timestamp"], f"{path}.timestamp")
    return out


def block_from(block: Any, path: str) -> dict[str, Any]:
    want(block, dict, path, "a content block object")
    kind = want(block.get("type"), str, f"{path}.type", "a block type")
    kind = kind.lower()
    if kind == "text":
        return {"type": "text", "text": want(block.get("text"), str, f"{path}.text", "a string")}
    if kind == "thinking":
        text = want(block.get("thinking"), str, f"{path}.thinking", "a string")
        return {"type": "thinking", "thinking": text}
    if kind == "tool_use":
        use = {"type": "tool_use", "id": want(block.get("id"), str, f"{path}.id", "a string")}
        use["name"] = want(block.get("name"), str, f"{path}.name", "a string")
        use["input"] = want(block.get("input", {}), dict, f"{path}.input", "an object")
        return use  # raw_input (the model's unparsed text) is not kept
    if kind == "tool_result":
        return result_from(block, path)
    if kind in MEDIA:
        return media_from(block, kind, path)
    raise fail(f"{path}.type", f"{kind!r} is not a block type this CLI converts")


def result_from(block: dict[str, Any], path: str) -> dict[str, Any]:
    out = {"type": "tool_result", "id": want(block.get("id"), str, f"{path}.id", "a string")}
    out["name"] = want(block.get("name"), str, f"{path}.name", "a string")
    state = block.get("state") or "finished"
    want(state, str, f"{path}.state", "a tool state")
    if state.lower() not in RESULT_STATES:
        accepted = ", ".join(sorted(RESULT_STATES))
        raise fail(f"{path}.state", f"{state!r} is not a finished tool state; expected {accepted}")
    out["state"] = RESULT_STATES[state.lower()]
    output = block.get("output", [])
    if isinstance(output, str):
        out["output"] = [{"type": "text", "text": output}]
    else:
        want(output, list, f"{path}.output", "a string or a list of blocks")
        items = [block_from(b, f"{path}.output[{i}]") for i, b in enumerate(output)]
        for i, item in enumerate(items):
            if item["type"] not in ("text", "image", "data"):
                raise fail(
                    f"{path}.output[{i}]", f"a tool result cannot hold a {item['type']} block"
                )
        out["output"] = items
    return out


def media_from(block: dict[str, Any], kind: str, path: str) -> dict[str, Any]:
    source = block.get("source", block)
    want(source, dict, f"{path}.source", "an object")
    if source.get("type") == "base64" or "data" in source:
        raise fail(f"{path}.source", "inline base64 data is not kept in a state; use a URL")
    url = want(source.get("url"), str, f"{path}.source.url", "a URL string")
    media_type = opt_str(source.get("media_type"), f"{path}.source.media_type")
    if kind == "image":
        return {"type": "image", "url": url, "media_type": media_type}
    return {"type": "data", "url": url, "media_type": media_type, "name": kind}


def timestamp_from(value: Any, path: str) -> float:
    """Epoch seconds from a string (ISO 8601 or "YYYY-MM-DD HH:MM:SS.fff"; naive is UTC) or a
    number (seconds, or milliseconds when over 10^11)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value / 1000 if abs(value) > 1e11 else float(value)
    if not isinstance(value, str):
        raise fail(path, "should be a date-time string or a number")
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise fail(path, f"{value!r} is not a date-time (e.g. 2026-06-02 10:15:30.123)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


# --------------------------------------------------------------------------- export


def to_agentscope(doc: dict[str, Any], *, java: bool = False) -> dict[str, Any]:
    """One of our state documents (``state_to_dict``) as an AgentScope AgentState.

    Python 2.x spelling (snake_case) by default; ``java=True`` spells keys in camelCase.
    """
    doc = copy.deepcopy(doc)
    ext = doc.pop(EXTENSION, None) or {}
    out: dict[str, Any] = {
        "session_id": doc["session_id"],
        "user_id": doc.get("user_id") or None,
        "context": [message_to(m, java=java) for m in doc.get("context", [])],
        "summary": doc.get("summary"),
        "permission_context": permissions_to(doc.get("permission_context") or {}, ext),
    }
    spelled = ext.get("mode_spelling")
    if isinstance(spelled, str) and spelled.lower() == out["permission_context"].get("mode"):
        out["permission_context"]["mode"] = spelled
    out["plan_mode_context"] = plan_to(doc.get("plan_mode_context") or {})
    out["tasks_context"] = tasks_to(doc.get("tasks_context") or {}, ext)
    out["tool_context"] = {
        "activated_groups": (doc.get("tool_context") or {}).get("activated_groups", [])
    }
    out["shutdown_interrupted"] = bool(doc.get("shutdown_interrupted", False))
    out.update(ext.get("extra") or {})
    ours = {k: v for k, v in doc.items() if k not in TOP and k != "schema_version"}
    if ours:
        out[OUR_EXTENSIONS] = ours
    return _camel_sections(out) if java else out


def message_to(msg: dict[str, Any], *, java: bool = False) -> dict[str, Any]:
    return {
        "id": msg.get("id"),
        "name": msg.get("name"),
        "role": msg["role"].upper(),
        "content": [block_to(b) for b in msg.get("content", [])],
        "metadata": msg.get("metadata") or {},
        "timestamp": timestamp_to(msg.get("timestamp", 0.0), iso=java),
    }


def block_to(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type", "text")
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block.get("input", {}),
        }
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "id": block["id"],
            "name": block["name"],
            "output": [block_to(b) for b in block.get("output", [])],
            "state": EXPORT_STATES[block.get("state", "success")],
        }
    if kind in ("image", "data"):
        media = "image" if kind == "image" else block.get("name") or "file"
        source = {"type": "url", "url": block["url"], "media_type": block.get("media_type")}
        return {"type": media if media in MEDIA else "file", "source": source}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block["thinking"]}
    return {"type": "text", "text": block.get("text", "")}


def timestamp_to(value: float, *, iso: bool = False) -> str:
    """UTC to the millisecond: 'YYYY-MM-DD HH:MM:SS.fff' (Python), '...THH:MM:SS.fffZ' (Java)."""
    when = dt.datetime.fromtimestamp(round(value * 1000) / 1000, dt.UTC)
    text = when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    return text.replace(" ", "T") + "Z" if iso else text


def _camel_sections(out: dict[str, Any]) -> dict[str, Any]:
    """Java's spelling: camelCase for the state's own keys and its sections' keys only
    (tool inputs, metadata and other free-form values keep theirs)."""
    result: dict[str, Any] = {}
    for key, value in out.items():
        if key in TOP and isinstance(value, dict):
            value = {camel(k): v for k, v in value.items()}
            if isinstance(value.get("tasks"), list):
                value["tasks"] = [
                    {camel(k): v for k, v in t.items()} if isinstance(t, dict) else t
                    for t in value["tasks"]
                ]
            for rules in ("allowRules", "denyRules", "askRules"):
                if isinstance(value.get(rules), dict):
                    value[rules] = {
                        tool: [{camel(k): v for k, v in r.items()} for r in items]
                        for tool, items in value[rules].items()
                    }
        result[camel(key) if key in TOP else key] = value
    return result
