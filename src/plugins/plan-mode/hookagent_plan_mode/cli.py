"""``hookagent plan show|enter|exit``: a session's plan mode from the command line.

Registered through the CLI's ``hookagent_register_cli_commands`` hook; ``hookagent_cli`` is
imported only when the command runs (its documented ``options`` module builds the agent
from the shared options), so this plugin does not depend on the CLI being installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from hookagent import RuntimeContext

from .api import PlanModeExit, enter_plan_mode, exit_plan_mode, get_plan_mode, read_plan
from .plans import Plan


def configure(parser: argparse.ArgumentParser) -> None:
    from hookagent_cli.options import add_common

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions = {
        "show": "show whether the session is in plan mode, and its plan",
        "enter": "put the session in plan mode (tools that change things are blocked)",
        "exit": "end the session's plan mode and print its plan",
    }
    for name, text in actions.items():
        p = sub.add_parser(name, help=text)
        p.add_argument("--json", action="store_true", help="print a JSON object")
        add_common(p)


def run(args: argparse.Namespace) -> int:
    from hookagent_cli.options import build_config, slot

    user, session = slot(args)
    config = build_config(args, model=None, tools=())
    ctx = RuntimeContext(user_id=user, session_id=session)

    async def main() -> dict[str, Any]:
        try:
            async with config.build() as agent:
                if args.action == "enter":
                    before = await get_plan_mode(agent, ctx)
                    await enter_plan_mode(agent, ctx)
                    plan = await read_plan(agent, ctx)
                    return _report(user, session, True, plan, changed=not before.plan_active)
                if args.action == "exit":
                    done: PlanModeExit = await exit_plan_mode(agent, ctx)
                    return _report(user, session, False, done.plan, changed=done.was_active)
                section = await get_plan_mode(agent, ctx)
                plan = await read_plan(agent, ctx)
                return _report(user, session, section.plan_active, plan, changed=False)
        finally:
            await config.aclose()

    report = anyio.run(main)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True))
    else:
        _print(args.action, report)
    return 0


def _report(user: str, session: str, active: bool, plan: Plan, *, changed: bool) -> dict[str, Any]:
    return {
        "user_id": user,
        "session_id": session,
        "plan_active": active,
        "changed": changed,
        "plan": plan.text,
        "plan_location": plan.location,
        "plan_missing": plan.missing,
    }


def _print(action: str, r: dict[str, Any]) -> None:
    where = f"session {r['session_id']!r} of user {r['user_id']!r}"
    if action == "enter":
        head = f"{where} is in plan mode" + ("" if r["changed"] else " (it already was)")
    elif action == "exit":
        head = f"{where} left plan mode" if r["changed"] else f"{where} was not in plan mode"
    else:
        head = f"{where}: plan mode {'active' if r['plan_active'] else 'off'}"
    print(head)
    if r["plan"] is None:
        print(f"plan: none ({r['plan_missing']})", file=sys.stderr)
    else:
        print(f"plan ({r['plan_location']}):\n{r['plan']}")
