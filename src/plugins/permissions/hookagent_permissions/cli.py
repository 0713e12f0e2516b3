"""``hookagent permissions show|set-mode|allow|deny|ask|remove|add-dir|remove-dir``.

Each command changes one slot (``--user``/``--session``) through the admin API: under the
CLI's session gate, persisted at once. ``hookagent-cli`` is needed only to run them: its
documented ``hookagent_cli.options`` helpers (``add_common``, ``build_config``, ``slot``)
are imported when the command runs, so this plugin does not depend on the CLI otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from hookagent import RuntimeContext

from . import admin
from .engine import Engine
from .section import PermissionContext

_KINDS = ("allow", "deny", "ask")


def configure(parser: argparse.ArgumentParser) -> None:
    from hookagent_cli.options import add_common

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", help="the slot's mode, working directories and rules")
    p.add_argument("--json", action="store_true", help="print the permission_context section")
    p = sub.add_parser("set-mode", help="default, accept_edits, explore, bypass or dont_ask")
    p.add_argument("mode")
    for kind in _KINDS:
        p = sub.add_parser(kind, help=f"add a {kind} rule (see docs/permissions.md)")
        p.add_argument("tool", help="a tool name or a glob (mcp__github__*)")
        p.add_argument(
            "content", nargs="?", default=None, help="rule_content, e.g. command:git push"
        )
        p.add_argument("--source", default="cli", help="where the rule comes from (default: cli)")
    p = sub.add_parser("remove", help="remove a rule")
    p.add_argument("kind", choices=_KINDS)
    p.add_argument("tool")
    p.add_argument("content", nargs="?", default=None)
    p = sub.add_parser("add-dir", help="add a working directory (path rules are relative to it)")
    p.add_argument("key")
    p.add_argument("path")
    p = sub.add_parser("remove-dir", help="remove a working directory")
    p.add_argument("key")
    for action in sub.choices.values():
        add_common(action)


def render(pc: PermissionContext) -> list[str]:
    """The section for people: mode, directories, rules in precedence order, problems."""
    lines = [f"mode: {pc.mode}"]
    for key, wd in pc.working_directories.items():
        lines.append(f"working directory {key}: {wd.path} (source: {wd.source or 'unknown'})")
    rules = list(pc.rules())
    for kind, _, rule in rules:
        shown = rule.rule_content or "(every call)"
        tag = "" if rule.behavior == kind else f" [{rule.behavior}]"
        lines.append(
            f"{kind:5} {rule.tool_name:20} {shown}{tag}  (source: {rule.source or 'unknown'})"
        )
    if not rules:
        lines.append("no rules: the mode decides (docs/permissions.md, the decision table)")
    lines += [f"problem: {p}" for p in Engine.build(pc).problems]
    return lines


async def _act(args: argparse.Namespace, agent: Any, ctx: RuntimeContext) -> PermissionContext:
    action = args.action
    if action == "show":
        return await admin.get_permission_context(agent, ctx)
    if action == "set-mode":
        return await admin.set_permission_mode(agent, ctx, args.mode)
    if action in _KINDS:
        return await admin.add_rule(agent, ctx, args.tool, action, args.content, args.source)
    if action == "remove":
        return await admin.remove_rule(agent, ctx, args.tool, args.kind, args.content)
    if action == "add-dir":
        return await admin.add_working_directory(agent, ctx, args.key, args.path, "cli")
    return await admin.remove_working_directory(agent, ctx, args.key)


def run(args: argparse.Namespace) -> int:
    from hookagent_cli.options import build_config, slot

    user, session = slot(args)
    config = build_config(args, model=None, tools=())
    ctx = RuntimeContext(user_id=user, session_id=session)

    async def main() -> PermissionContext:
        try:
            return await _act(args, config.build(), ctx)
        finally:
            await config.aclose()

    async def main_show() -> tuple[PermissionContext, bool]:
        try:
            agent = config.build()
            return await _act(args, agent, ctx), await admin.has_permission_context(agent, ctx)
        finally:
            await config.aclose()

    pc, own = anyio.run(main_show) if args.action == "show" else (anyio.run(main), True)
    if not own:
        print(
            "(this slot has no permission_context: its calls are decided only where a "
            "configuration names the plugin; shown: where a first change starts from)",
            file=sys.stderr,
        )
    if getattr(args, "json", False):
        print(json.dumps(pc.to_json(), indent=2, ensure_ascii=False))
    else:
        if args.action != "show":
            print(f"saved: user {user!r}, session {session!r}", file=sys.stderr)
        print("\n".join(render(pc)))
    return 0
