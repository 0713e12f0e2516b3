"""``hookagent tasks show|begin|decide|set-subject|invalidate|verify``: the trusted contract
for a person at a terminal (needs ``hookagent-cli``; imported only when the CLI runs).

Every command that changes something takes ``--expected-revision N`` (``show`` prints it): a
decision is about the state you looked at, and a change made meanwhile is a conflict, not
something your command silently overrides.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio

from .admin import TaskAdmin
from .model import AUTHORITIES, OUTCOMES, Decision, TasksContext, TaskScope
from .sectionjson import binding_json, section_json
from .todos import MARKS
from .verifiers import Check, CommandVerifier, FunctionVerifier, Verifier, run_verification


def configure(parser: argparse.ArgumentParser) -> None:
    from hookagent_cli.options import add_common

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", help="show the session's task state")
    p.add_argument("--json", action="store_true", help="print the section as JSON")
    p = sub.add_parser("begin", help="begin a task (clears todos, requirements and evidence)")
    p.add_argument("task_id")
    p.add_argument("objective")
    p.add_argument("--source-ref", default="", help="where the task comes from")
    p = sub.add_parser("decide", help="confirm or reject a requirement")
    p.add_argument("requirement_id")
    p.add_argument("decision", choices=("confirm", "reject"))
    p.add_argument("--authority", choices=AUTHORITIES, default="USER")
    p.add_argument("--source-ref", required=True, help="what the decision rests on")
    p = sub.add_parser("set-subject", help="name the subject version evidence is about")
    p.add_argument("version")
    sub.add_parser("invalidate", help="no subject version is current until set-subject")
    p = sub.add_parser("verify", help="record a verification of a confirmed criterion")
    p.add_argument("requirement_id")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--command", help="run this command: exit 0 is PASSED, else FAILED")
    how.add_argument("--outcome", choices=OUTCOMES, help="record your own finding")
    p.add_argument("--reason", default="", help="with --outcome: what you found")
    p.add_argument("--verifier-id", default=None, help="default: 'command' or 'cli-user'")
    p.add_argument("--action-id", default=None)
    for name, action in sub.choices.items():
        if name != "show":
            action.add_argument("--expected-revision", type=int, required=True, metavar="N")
            action.add_argument("--json", action="store_true", help="print the result as JSON")
        add_common(action)


def run(args: argparse.Namespace) -> int:
    from hookagent_cli.options import build_config, slot

    user, session = slot(args)
    config = build_config(args, model=None, tools=())

    async def main() -> int:
        try:
            admin = TaskAdmin(config.build())
            result = await ACTIONS[args.action](admin, user, session, args)
            tc = (
                result
                if isinstance(result, TasksContext)
                else await admin.get(user, session_id=session)
            )
            if args.json:
                print(json.dumps(as_json(tc, result), ensure_ascii=False, indent=2))
            else:
                print("\n".join(describe(tc)))
            return 0
        finally:
            await config.aclose()

    return anyio.run(main)


async def _show(admin: TaskAdmin, user: str, session: str, args: Any) -> Any:
    return await admin.get(user, session_id=session)


async def _begin(admin: TaskAdmin, user: str, session: str, args: Any) -> Any:
    scope = TaskScope(args.task_id, args.objective, args.source_ref)
    return await admin.begin_task(
        user, scope, expected_revision=args.expected_revision, session_id=session
    )


async def _decide(admin: TaskAdmin, user: str, session: str, args: Any) -> Any:
    status = "CONFIRMED" if args.decision == "confirm" else "REJECTED"
    return await admin.decide(
        user,
        args.requirement_id,
        status,
        Decision(args.authority, args.source_ref),
        expected_revision=args.expected_revision,
        session_id=session,
    )


async def _set_subject(admin: TaskAdmin, user: str, session: str, args: Any) -> Any:
    return await admin.set_subject_version(
        user, args.version, expected_revision=args.expected_revision, session_id=session
    )


async def _invalidate(admin: TaskAdmin, user: str, session: str, args: Any) -> Any:
    return await admin.invalidate_subject(
        user, expected_revision=args.expected_revision, session_id=session
    )


async def _verify(admin: TaskAdmin, user: str, session: str, args: Any) -> Any:
    verifier: Verifier
    if args.command:
        verifier = CommandVerifier.from_string(args.verifier_id or "command", args.command)
    else:
        found = Check(args.outcome, args.reason)
        verifier = FunctionVerifier(args.verifier_id or "cli-user", lambda _r, _b: found)
    return await run_verification(
        admin,
        user,
        verifier,
        args.requirement_id,
        action_id=args.action_id,
        session_id=session,
        expected_revision=args.expected_revision,
    )


ACTIONS = {
    "show": _show,
    "begin": _begin,
    "decide": _decide,
    "set-subject": _set_subject,
    "invalidate": _invalidate,
    "verify": _verify,
}


def as_json(tc: TasksContext, result: Any) -> dict[str, Any]:
    doc = section_json(tc)
    doc["current_binding"] = None if tc.binding is None else binding_json(tc.binding)
    for report, item in zip(tc.verifications, doc["verifications"], strict=True):
        item["current"] = tc.is_current(report)
    if not isinstance(result, TasksContext):
        doc["recorded"] = {"id": result.id, "outcome": result.outcome, "reason": result.reason}
    return doc


def describe(tc: TasksContext) -> list[str]:
    """The section for a person: revision first (the next command needs it)."""
    lines = [f"revision {tc.revision}"]
    if tc.scope is not None:
        lines.append(f"task {tc.scope.task_id}: {tc.scope.objective}")
        if tc.scope.source_ref:
            lines.append(f"  source: {tc.scope.source_ref}")
        lines.append(
            f"  contract version {tc.contract_version}, subject version "
            f"{tc.subject_version or '(none)'}"
        )
    elif tc.objective:
        lines.append(f"objective: {tc.objective}")
    lines.append(f"todos ({len(tc.tasks)}):")
    lines += [f"  {MARKS.get(t.state, '[ ]')} {t.subject}" for t in tc.tasks]
    if tc.requirements:
        lines.append(f"requirements ({len(tc.requirements)}):")
        for r in tc.requirements:
            by = f" by {r.decision.authority} ({r.decision.source_ref})" if r.decision else ""
            lines.append(f"  {r.id} {r.kind} {r.status}{by}: {r.text}  [source: {r.source_ref}]")
    if tc.verifications:
        lines.append(f"verifications ({len(tc.verifications)}):")
        for v in tc.verifications:
            note = "" if tc.is_current(v) else "  (not current: another binding)"
            lines.append(f"  {v.requirement_id} {v.outcome} by {v.verifier_id}: {v.reason}{note}")
    return lines
