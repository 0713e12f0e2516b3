"""The AgentScope sections the harness plugins own: permissions, plan mode and tasks.

These sections are plugin sections in our state, kept with the reference's own field names
(``hookagent-permissions``, ``hookagent-plan-mode``, ``hookagent-tasks`` read them). Import
checks each one (a clear error naming the JSON path) and keeps it as it is, in snake_case;
export writes it back. A slot saved before the plugins owned these sections may hold the
kernel's old minimal shape (``{"mode", "rules"}``, ``{"active", "plan_file"}``,
``{"todos", "revision", "objective"}``): export converts that to the reference's shape.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import re
from typing import Any

from .errors import AgentScopeFormatError

EXTENSION = "agentscope"
KINDS = ("allow", "deny", "ask")
BEHAVIOURS = ("allow", "deny", "ask", "passthrough")
TODO_STATES = ("pending", "in_progress", "completed")


def snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def get(obj: dict[str, Any], name: str, default: Any = None) -> Any:
    if name in obj:
        return obj[name]
    return obj.get(camel(name), default)


def want(value: Any, kind: type, path: str, what: str) -> Any:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        got = "null" if value is None else type(value).__name__
        raise AgentScopeFormatError(path, f"should be {what}, got {got}")
    return value


def opt_str(value: Any, path: str) -> str | None:
    return None if value is None else want(value, str, path, "a string or null")


def snake_keys(obj: dict[str, Any]) -> dict[str, Any]:
    return {snake(k): v for k, v in obj.items()}


# --------------------------------------------------------------------------- permissions


def _rules(perm: dict[str, Any], path: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(list kind, tool, behaviour, rule) for every rule of allow/deny/ask_rules."""
    found: list[tuple[str, str, str, dict[str, Any]]] = []
    for kind in KINDS:
        where = f"{path}.{kind}_rules"
        table = get(perm, f"{kind}_rules", {}) or {}
        if isinstance(table, list):  # a flat list of rules, each naming its tool
            table = {"": table}
        want(table, dict, where, "an object of tool name -> list of rules")
        for tool, items in table.items():
            want(items, list, f"{where}.{tool}", "a list of rules")
            for j, rule in enumerate(items):
                at = f"{where}.{tool}[{j}]" if tool else f"{where}[{j}]"
                want(rule, dict, at, "a rule object")
                name = want(get(rule, "tool_name", tool), str, f"{at}.tool_name", "a string")
                if not name:
                    raise AgentScopeFormatError(f"{at}.tool_name", "should name a tool")
                behaviour = want(get(rule, "behavior", kind), str, f"{at}.behavior", "a string")
                if behaviour.lower() not in BEHAVIOURS:
                    raise AgentScopeFormatError(
                        f"{at}.behavior",
                        f"{behaviour!r} is not a behavior; expected allow, deny, ask or passthrough",
                    )
                opt_str(get(rule, "rule_content"), f"{at}.rule_content")
                found.append((kind, name, behaviour.lower(), rule))
    return found


def permissions_from(perm: Any, path: str) -> dict[str, Any]:
    """The section checked and spelled in snake_case (rule tables included)."""
    want(perm, dict, path, "an object")
    want(get(perm, "mode", "default") or "default", str, f"{path}.mode", "a string")
    dirs = get(perm, "working_directories", {}) or {}
    want(dirs, dict, f"{path}.working_directories", "an object of key -> {path, source}")
    _rules(perm, path)
    out = snake_keys(copy.deepcopy(perm))
    out["mode"] = (out.get("mode") or "default").lower()
    for kind in KINDS:
        table = out.get(f"{kind}_rules")
        if isinstance(table, list):
            table = {"": table}
        if isinstance(table, dict):
            out[f"{kind}_rules"] = {
                tool: [snake_keys(r) for r in items] for tool, items in table.items()
            }
    return out


def _our_rules(perm: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(r["tool"], r["decision"], r.get("pattern")) for r in perm.get("rules", [])]


def permissions_to(perm: dict[str, Any], ext: dict[str, Any]) -> dict[str, Any]:
    """The reference's section from ours: as it is, unless it has the old minimal shape."""
    if ("rules" not in perm and "mode" in perm) or any(f"{k}_rules" in perm for k in KINDS):
        return copy.deepcopy(perm)
    original = (ext.get("permission_context") or {}).get("original") or {}
    mode = perm.get("mode", "default")
    old_mode = get(original, "mode", "default") or "default"
    out: dict[str, Any] = snake_keys(original)
    out["mode"] = old_mode if old_mode.lower() == mode else mode
    out["working_directories"] = get(original, "working_directories", {}) or {}
    held = _rules(original, "$") if original else []
    derived = [(n, b, get(r, "rule_content")) for _, n, b, r in held if b != "passthrough"]
    if original and derived == _our_rules(perm):  # unchanged since import: as it was
        for kind in KINDS:
            out[f"{kind}_rules"] = get(original, f"{kind}_rules", {}) or {}
        return out
    ours = _our_rules(perm)
    tables: dict[str, dict[str, list[dict[str, Any]]]] = {f"{k}_rules": {} for k in KINDS}
    for kind, name, behaviour, rule in held:  # the original order, for what is still there
        key = (name, behaviour, get(rule, "rule_content"))
        if behaviour == "passthrough" or key in ours:
            if key in ours:
                ours.remove(key)
            tables[f"{kind}_rules"].setdefault(name, []).append(snake_keys(rule))
    for name, decision, pattern in ours:  # added since the import
        tables[f"{decision}_rules"].setdefault(name, []).append(
            {"tool_name": name, "rule_content": pattern, "behavior": decision, "source": None}
        )
    out.update(tables)
    return out


# --------------------------------------------------------------------------- tasks


def tasks_from(tasks: Any, path: str) -> dict[str, Any]:
    """The section checked and spelled in snake_case (each task's keys included)."""
    want(tasks, dict, path, "an object")
    key = "tasks" if get(tasks, "tasks") is not None else "todos"
    items = want(get(tasks, key, []) or [], list, f"{path}.{key}", "a list")
    for i, task in enumerate(items):
        at = f"{path}.{key}[{i}]"
        want(task, dict, at, "a task object")
        want(get(task, "subject", task.get("content")), str, f"{at}.subject", "a string")
        state = get(task, "state", task.get("status")) or "pending"
        want(state, str, f"{at}.state", "a string")
        if state.lower() not in TODO_STATES:
            raise AgentScopeFormatError(
                f"{at}.state",
                f"{state!r} is not a task state; expected pending, in_progress or completed",
            )
        opt_str(task.get("id"), f"{at}.id")
    revision = get(tasks, "revision", 0)
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
        raise AgentScopeFormatError(f"{path}.revision", "should be an integer >= 0")
    opt_str(get(tasks, "objective"), f"{path}.objective")
    out = snake_keys(copy.deepcopy(tasks))
    if key == "todos":  # the old minimal shape: the reference's from it
        return tasks_to(out, {})
    out["tasks"] = [snake_keys(t) for t in items]
    for task in out["tasks"]:
        task["state"] = (task.get("state") or "pending").lower()
    return out


def _now() -> str:
    when = dt.datetime.now(dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"


def tasks_to(tasks: dict[str, Any], ext: dict[str, Any]) -> dict[str, Any]:
    """The reference's section from ours: as it is, unless it has the old minimal shape."""
    if "todos" not in tasks and tasks:
        return copy.deepcopy(tasks)
    original = (ext.get("tasks_context") or {}).get("original") or {}
    out = snake_keys(original)
    old = [snake_keys(t) for t in (get(original, "tasks") or []) if isinstance(t, dict)]
    by_id = {t.get("id"): t for t in old if t.get("id")}
    by_subject = {t.get("subject"): t for t in old}
    out.pop("todos", None)
    out["tasks"] = []
    for todo in tasks.get("todos", []):
        was = by_id.get(todo.get("id")) or by_subject.get(todo["content"]) or {}
        task = {
            "id": todo.get("id") or was.get("id") or os.urandom(16).hex(),
            "subject": todo["content"],
            "description": was.get("description", ""),
            "state": todo.get("status", "pending"),
            "created_at": was.get("created_at") or _now(),
            "owner": was.get("owner"),
            "blocks": was.get("blocks", []),
            "blocked_by": was.get("blocked_by", []),
            "metadata": was.get("metadata", {}),
        }
        out["tasks"].append({**was, **task})
    out["revision"] = tasks.get("revision", 0)
    objective = tasks.get("objective")
    scope = out.get("task_scope")
    if isinstance(scope, dict) and "objective" not in out:
        out["task_scope"] = {**scope, "objective": objective}
    elif objective is not None or "objective" in out:
        out["objective"] = objective
    return out


# --------------------------------------------------------------------------- plan mode


def plan_from(plan: Any, path: str) -> dict[str, Any]:
    want(plan, dict, path, "an object")
    want(get(plan, "plan_active", False), bool, f"{path}.plan_active", "true or false")
    opt_str(get(plan, "current_plan_file"), f"{path}.current_plan_file")
    return snake_keys(copy.deepcopy(plan))


def plan_to(plan: dict[str, Any]) -> dict[str, Any]:
    """The reference's section from ours (the old minimal shape: ``active``, ``plan_file``)."""
    if "active" not in plan and "plan_file" not in plan:
        out = copy.deepcopy(plan)
        out.setdefault("plan_active", False)
        out.setdefault("current_plan_file", None)
        return out
    return {"plan_active": bool(plan.get("active")), "current_plan_file": plan.get("plan_file")}
