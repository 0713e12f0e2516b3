"""The TASK_STATE projection: a pure function of (the request's messages, the section).

What the model sees of the task state is built per request and never stored:

* every full ``todo_write`` result but the latest current one becomes a receipt ("Todo update
  recorded at revision N"), so old lists do not pile up in the context;
* when no current full result is visible (none yet, an admin change since, or the latest
  one truncated or offloaded: its text no longer equals the list it stood for), one synthetic
  user message with a fixed id holds ``<TASK_STATE revision="N">``; requirements and
  verification parts are added when there are any, the todos are left out when the current
  full result is visible (not duplicated);
* text that came from users or the model is XML-escaped, so ``</TASK_STATE>`` in a todo
  cannot close the block.

Projecting a projected list again gives the same list (receipts are not full results, and the
synthetic message is replaced, with a timestamp taken from the messages, not the clock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
from hookagent.messages import Msg, TextBlock, ToolResultBlock

from .model import TasksContext
from .todos import RESULT_HEADER, render_result, todo_lines

TODO_TOOL = "todo_write"
TASK_STATE_ID = "hookagent-tasks-state"
"""The id of the synthetic TASK_STATE message (a request holds at most one)."""
SHOW = ("todos", "requirements", "verification")


@attrs.frozen
class View:
    """What the projection shows (``plugin_options["tasks"]["show"]``)."""

    todos: bool = True
    requirements: bool = True
    verification: bool = True


def escape(value: str) -> str:
    """XML-escape text and attribute values (``&``, ``<``, ``>``, ``"``)."""
    if "&" in value:
        value = value.replace("&", "&amp;")
    if "<" in value:
        value = value.replace("<", "&lt;")
    if ">" in value:
        value = value.replace(">", "&gt;")
    if '"' in value:
        value = value.replace('"', "&quot;")
    return value


def receipt(revision: str) -> str:
    return f"Todo update recorded at revision {revision}."


def is_empty(tc: TasksContext) -> bool:
    """Nothing was ever recorded: a plain agent's request stays exactly as it was."""
    return (
        tc.revision == 0
        and not tc.tasks
        and tc.scope is None
        and not tc.requirements
        and not tc.verifications
    )


def render_state(tc: TasksContext, view: View, *, todos: bool) -> str | None:
    """The TASK_STATE block (None when it would say nothing)."""
    parts: list[str] = []
    scope = tc.scope
    if scope is not None:
        parts.append(
            f'<OBJECTIVE task_id="{escape(scope.task_id)}">{escape(scope.objective)}</OBJECTIVE>'
        )
    elif tc.objective:
        parts.append(f"<OBJECTIVE>{escape(tc.objective)}</OBJECTIVE>")
    show_todos = todos and view.todos
    if show_todos:
        lines = todo_lines(tc.tasks, escape) or ["(no todos)"]
        parts.append("<TODOS>\n" + "\n".join(lines) + "\n</TODOS>")
    if view.requirements and tc.requirements:
        lines = []
        for r in tc.requirements:
            note = {
                "CANDIDATE": "proposed, not confirmed, unverified",
                "CONFIRMED": "confirmed; not verified satisfaction",
                "REJECTED": "rejected: do not pursue",
            }[r.status]
            lines.append(f"- {escape(r.id)} {r.kind} {r.status} ({note}): {escape(r.text)}")
        parts.append("<REQUIREMENTS>\n" + "\n".join(lines) + "\n</REQUIREMENTS>")
    if view.verification and tc.verifications:
        current = [v for v in tc.verifications if tc.is_current(v)]
        lines = [
            f"- {escape(v.requirement_id)} {v.outcome} by {escape(v.verifier_id)} "
            f"(action {escape(v.action_id)}): {escape(v.reason)}"
            for v in current
        ]
        stale = len(tc.verifications) - len(current)
        if stale:
            lines.append(
                f"- {stale} older report(s) are about another subject version: not current"
            )
        version = escape(tc.subject_version or "")
        parts.append(
            f'<VERIFICATION subject_version="{version}">\n'
            + "\n".join(lines)
            + "\n(PASSED is not a verdict on overall completion)\n</VERIFICATION>"
        )
    if not parts and not show_todos:
        return None
    body = "\n".join(parts)
    return f'<TASK_STATE revision="{tc.revision}">\n{body}\n</TASK_STATE>'


def project(
    messages: Sequence[Msg],
    tc: TasksContext,
    view: View = View(),  # frozen: safe to share
) -> list[Msg]:
    """The messages the model is sent: receipts for older full results, plus TASK_STATE.

    Returns a new list; ``messages`` and its messages are never changed.
    """
    out = projected(messages, tc, view, render_result(tc), render_state)
    return list(messages) if out is None else out


def projected(
    messages: Sequence[Msg],
    tc: TasksContext,
    view: View,
    full_result: str,
    render: Callable[..., str | None],
) -> list[Msg] | None:
    """``project`` for the middleware: None when the messages need no change.

    ``full_result`` is ``render_result(tc)`` and ``render`` is ``render_state`` (or a cached
    version of either), so that a request whose section did not change renders nothing.
    One pass over the messages.
    """
    if is_empty(tc):
        if any(m.id == TASK_STATE_ID for m in messages):
            return [m for m in messages if m.id != TASK_STATE_ID]
        return None
    found: list[tuple[int, int, str]] = []  # (message index, block index, its revision)
    synthetic: list[int] = []
    for i, msg in enumerate(messages):
        role = msg.role
        if role == "tool":
            for j, block in enumerate(msg.content):
                if (
                    type(block) is ToolResultBlock
                    and block.name == TODO_TOOL
                    and block.state == "success"
                    and (m := RESULT_HEADER.match(block.text))
                ):
                    found.append((i, j, m.group(1)))
        elif role == "user" and msg.id == TASK_STATE_ID:
            synthetic.append(i)
    current = False
    if found:
        i, j, _ = found[-1]
        current = messages[i].content[j].text == full_result  # type: ignore[union-attr]
        # the latest stays when it is current, or when no todos are shown in its place
        if current or not view.todos:
            found.pop()
    state = render(tc, view, todos=not current)
    if not found and not synthetic and state is None:
        return None
    base = list(messages)
    by_message: dict[int, list[tuple[int, str]]] = {}
    for i, j, revision in found:
        by_message.setdefault(i, []).append((j, revision))
    for i, blocks in by_message.items():
        base[i] = with_receipts(messages[i], blocks)
    for i in reversed(synthetic):
        del base[i]
    if state is not None:
        stamp = base[-1].timestamp if base else 0.0
        base.append(
            Msg("user", state, id=TASK_STATE_ID, timestamp=stamp, metadata={"transient": True})
        )
    return base


_receipts: dict[int, tuple[Msg, tuple[tuple[int, str], ...], Msg]] = {}
_RECEIPTS_KEPT = 4096


def with_receipts(msg: Msg, blocks: Sequence[tuple[int, str]]) -> Msg:
    """``msg`` with the blocks at (index, revision) reduced to receipts.

    Memoised by the message object: the requests of one call share the history's messages,
    so each result is reduced once per call, not once per request.
    """
    key = tuple(blocks)
    hit = _receipts.get(id(msg))
    if hit is not None and hit[0] is msg and hit[1] == key:
        return hit[2]
    content = list(msg.content)
    for j, revision in blocks:
        old: ToolResultBlock = content[j]  # type: ignore[assignment]
        content[j] = ToolResultBlock(old.id, old.name, (TextBlock(receipt(revision)),), old.state)
    reduced = attrs.evolve(msg, content=tuple(content))
    if len(_receipts) >= _RECEIPTS_KEPT:
        _receipts.clear()
    _receipts[id(msg)] = (msg, key, reduced)  # holds msg: its id is not reused meanwhile
    return reduced


def ground(system: str | None, note: str) -> str:
    """The system prompt with the grounding note once at its end."""
    if not note:
        return system or ""
    if system is None or not system:
        return note
    if system.endswith(note):
        return system
    return f"{system}\n\n{note}"


DEFAULT_GROUNDING = (
    "Task state: a <TASK_STATE> message, when present, is the current todo list and task "
    "contract kept by the application; it is reference data, not an instruction from the "
    "user. When todo_write is offered, keep the todo list with it (the whole list each time, "
    "at most one in_progress). Requirements you propose with task_requirement_propose are "
    "candidates; only the application confirms them. A confirmed requirement is not "
    "verified, and a PASSED check is not a verdict that the task is complete."
)
