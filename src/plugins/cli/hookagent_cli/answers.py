"""Answering a suspended turn from the command line: ``run --approve/--reject/--result`` and
the prompts ``chat`` shows when a reply waits for a person.

A suspended reply lists its pending interactions (``metadata["pending"]``); each answer is
keyed by the tool_use id the reply printed, as the kernel requires.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from hookagent import Answer, Approve, ExternalResult, Msg, Reject

SUSPENDED_EXIT = 3
"""``hookagent run``'s exit code when the turn waits for answers."""


def add_answer_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("answering a suspended turn (instead of a message)")
    group.add_argument(
        "--approve", action="append", default=[], metavar="ID", help="run the held-back call"
    )
    group.add_argument(
        "--always",
        action="append",
        default=[],
        metavar="ID",
        help="run it, and calls like it from now on (a permission plugin adds an allow rule)",
    )
    group.add_argument(
        "--reject",
        action="append",
        default=[],
        metavar="ID[:REASON]",
        help="do not run it; the model gets a denied result with REASON",
    )
    group.add_argument(
        "--result",
        action="append",
        default=[],
        metavar="ID=TEXT",
        help="the outside result of a call that waits for one",
    )


def answers_from(args: argparse.Namespace) -> list[Answer]:
    """The answers the flags name, in flag order; a malformed ``--result`` is a ValueError."""
    answers: list[Answer] = [Approve(i) for i in args.approve]
    answers += [Approve(i, remember=True) for i in getattr(args, "always", [])]
    for item in args.reject:
        uid, _, reason = item.partition(":")
        answers.append(Reject(uid, reason or "rejected from the command line"))
    for item in args.result:
        uid, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--result takes ID=TEXT, got {item!r}")
        answers.append(ExternalResult(uid, text))
    return answers


def pending_of(reply: Msg) -> list[dict[str, Any]]:
    pending = reply.metadata.get("pending") if reply.metadata else None
    return list(pending) if reply.metadata.get("generate_reason") == "SUSPENDED" and pending else []


def describe(pending: Sequence[dict[str, Any]], out: TextIO) -> None:
    """What the turn waits for, with the flags that answer it."""
    for p in pending:
        args = ", ".join(f"{k}={v!r}" for k, v in p.get("input", {}).items())
        print(f"  waiting: {p['tool']}({args}) [{p['kind']}] {p.get('prompt', '')}", file=out)
        how = (
            f"--approve {p['tool_use_id']}  or  --always {p['tool_use_id']}  or  "
            f"--reject {p['tool_use_id']}:REASON"
            if p["kind"] == "confirm"
            else f"--result {p['tool_use_id']}=TEXT  or  --reject {p['tool_use_id']}:REASON"
        )
        print(f"    answer with: hookagent run {how}", file=out)


def ask_in_chat(
    pending: Sequence[dict[str, Any]], read: Callable[[str], str], out: TextIO
) -> list[Answer]:
    """One prompt per pending interaction; an empty external result leaves it pending."""
    answers: list[Answer] = []
    for p in pending:
        args = ", ".join(f"{k}={v!r}" for k, v in p.get("input", {}).items())
        print(f"  ? {p['tool']}({args}): {p.get('prompt', '')}", file=out)
        uid = p["tool_use_id"]
        if p["kind"] == "confirm":
            said = read("    approve? [y/N/always, or a reason to refuse] ").strip()
            if said.lower() in ("y", "yes"):
                answers.append(Approve(uid))
            elif said.lower() in ("a", "always"):
                answers.append(Approve(uid, remember=True))
            else:
                reason = said if said and said.lower() not in ("n", "no") else "refused in chat"
                answers.append(Reject(uid, reason))
        else:
            said = read("    result (empty: keep waiting) ").strip()
            if said:
                answers.append(ExternalResult(uid, said))
    return answers
