"""What the model reads: the system-prompt banner and the denial of a blocked tool.

Both say what plan mode is, what is blocked and how to leave it, so a model that never saw
plan mode before can recover on its own.
"""

from __future__ import annotations

BANNER_TAG = "plan_mode"

DEFAULT_BANNER = (
    "Plan mode is active. Investigate with read-only tools and make a plan; do not change "
    "anything yet. Tools that can change files, systems or data are blocked and return a "
    "'denied' result."
)
WITH_TOOLS = (
    " Write the plan with plan_write, then call plan_exit to present it and end plan mode; "
    "the blocked tools work again after that."
)
WITHOUT_TOOLS = (
    " Present your plan in your reply; plan mode ends when the plan is agreed (the "
    "application ends it), and the blocked tools work again after that."
)

INHERITED_NOTE = (
    " This run is a subagent of a run in plan mode: it inherited plan mode and cannot end it "
    "(plan_exit is refused); report your findings to the parent instead."
)


def banner(text: str | None, plan_file: str | None, inherited: bool, tools: bool) -> str:
    """The banner block appended to the system prompt (``tools``: the plan tools are offered
    to this call; an agent that does not enable their group has plan mode set by the
    application only)."""
    body = text or DEFAULT_BANNER + (WITH_TOOLS if tools else WITHOUT_TOOLS)
    if plan_file:
        body += f" The plan file is {plan_file}."
    if inherited:
        body += INHERITED_NOTE
    return f"<{BANNER_TAG}>\n{body}\n</{BANNER_TAG}>"


def with_banner(system: str | None, block: str) -> str:
    return block if not system else f"{system}\n\n{block}"


def denial(tool: str, known: bool, inherited: bool, tools: bool, ended: bool = False) -> str:
    """The ``denied`` result of a tool blocked in plan mode."""
    why = (
        "it is not declared read-only, so it may change things"
        if known
        else "no such tool is registered, and a tool without a read-only declaration is "
        "treated as one that changes things"
    )
    if ended:
        how = (
            "Plan mode ended in this step (plan_exit); a tool asked for in the same step as "
            "plan_exit stays blocked. Call it again now."
        )
    elif inherited:
        how = "This run inherited plan mode from its parent run; only the parent can end it."
    elif tools:
        how = (
            "To use it, finish the plan: write it with plan_write, then call plan_exit (plan "
            "mode ends and the plan is returned); then call the tool again."
        )
    else:
        how = "Present your plan instead; the tool works again once plan mode is ended."
    return f"Plan mode blocked the tool {tool!r}: {why}. {how}"
