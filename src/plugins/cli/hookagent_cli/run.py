"""``hookagent run``: one message in, the reply out (text, or ``--json`` for scripts).

Progress (tool calls and results) goes to stderr, the reply to stdout. Ctrl-C interrupts the
call like in ``chat``; the interrupted reply is printed and the exit code is 130. A turn that
waits for answers (a permission question, an outside result) prints what it waits for and
exits 3; ``run --approve ID`` (``--reject ID:REASON``, ``--result ID=TEXT``) answers it.
"""

from __future__ import annotations

import argparse
import io
import sys

from .answers import SUSPENDED_EXIT, add_answer_options, answers_from, describe, pending_of
from .options import build_config, slot
from .printer import EventPrinter, ToolResultTap
from .remote import add_server_options, run_remote
from .render import as_json
from .runner import CallRunner, Leave


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message", nargs="?", help="the user message ('-' reads it from stdin)")
    parser.add_argument("--json", action="store_true", help="print a JSON object, not the text")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--interrupt-message", default=None, help="user message recorded when Ctrl-C interrupts"
    )
    add_answer_options(parser)
    add_server_options(parser)
    parser.set_defaults(run_parser=parser)


def run(args: argparse.Namespace) -> int:
    user, session = slot(args)
    answers = answers_from(args)
    text: str | None = None
    if answers:
        if args.message is not None:
            args.run_parser.error(
                "give a message or answers (--approve/--reject/--result), not both"
            )
    else:
        if args.message is None:
            args.run_parser.error(
                "give a message, or answers (--approve/--reject/--result) to a suspended turn"
            )
        text = sys.stdin.read() if args.message == "-" else args.message
        if not text.strip():
            raise ValueError("the message is empty")
    if args.server:
        return run_remote(args, text, answers)
    tap = ToolResultTap()
    config = build_config(args, plugins=[tap])
    progress = io.StringIO() if args.quiet or args.json else sys.stderr
    printer = EventPrinter(progress, tap, stream=False)
    runner = CallRunner(config, tap, user, session)
    with runner.open():
        try:
            reply = runner.call(text, printer, args.interrupt_message, answers)
        except Leave:
            print("hookagent: run cancelled; its input was saved", file=sys.stderr)
            return 130
        state, version = runner.state()
    reason = reply.metadata.get("generate_reason", "COMPLETED")
    pending = pending_of(reply)
    if args.json:
        print(
            as_json(
                {
                    "reply": reply.text,
                    "generate_reason": reason,
                    "run_id": runner.last_run_id,
                    "user_id": user,
                    "session_id": session,
                    "version": version,
                    "messages": len(state.context) if state is not None else 0,
                    "turn_id": reply.metadata.get("turn_id"),
                    "pending": pending,
                }
            )
        )
    elif pending:
        print(f"the turn waits for {len(pending)} answer(s):")
        describe(pending, sys.stdout)
    else:
        print(reply.text)
    if pending:
        return SUSPENDED_EXIT
    return 130 if reason == "INTERRUPTED" else 0
