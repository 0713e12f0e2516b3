"""``hookagent chat``: an interactive, resumable conversation with streamed replies.

Ctrl-C during a reply interrupts it (the kernel closes open tool calls as ``interrupted`` and
saves); Ctrl-C again, Ctrl-C or Ctrl-D at the prompt, or ``/exit`` leaves.
"""

from __future__ import annotations

import argparse
import sys

from .options import build_config, describe_store, slot
from .printer import EventPrinter, ToolResultTap
from .render import history_lines, show_state
from .runner import CallRunner, Leave

HELP = "/history shows the conversation, /clear clears it, /exit leaves"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history", type=int, default=6, metavar="N", help="show the last N messages on resume"
    )


def run(args: argparse.Namespace) -> int:
    user, session = slot(args)
    tap = ToolResultTap()
    config = build_config(args, plugins=[tap])
    out = sys.stdout
    runner = CallRunner(config, tap, user, session)
    with runner.open():
        state, version = runner.state()
        where = describe_store(config, runner.portal.call(config.kernel.store))  # type: ignore[union-attr]
        print(f"hookagent chat: user {user!r}, session {session!r}, model {args.model!r}", file=out)
        print(f"state: {where} (version {version})", file=out)
        print(f"Ctrl-C interrupts a reply; Ctrl-C again or Ctrl-D leaves. {HELP}.", file=out)
        if state is not None and state.context:
            shown = state.context[-args.history :] if args.history > 0 else []
            print(f"resuming: {len(state.context)} earlier messages", file=out)
            for line in history_lines(shown, start=len(state.context) - len(shown) + 1):
                print(line, file=out)
        runner.on_interrupt = lambda: print(
            "\n^C interrupting… (Ctrl-C again to quit)", file=out, flush=True
        )
        while True:
            try:
                line = input("you> ")
            except (EOFError, KeyboardInterrupt):
                print(file=out)
                break
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                break
            if text == "/history":
                state, version = runner.state()
                if state is None:
                    print("(no conversation yet)", file=out)
                else:
                    show_state(state, version, out)
                continue
            if text == "/clear":
                runner.portal.call(runner.agent.clear_context, user, session)  # type: ignore[union-attr]
                print("context cleared (other sections kept)", file=out)
                continue
            printer = EventPrinter(out, tap)
            try:
                reply = runner.call(text, printer)
            except Leave:
                print("\nleaving; the state was saved.", file=out)
                return 130
            printer.reply(reply.id, reply.text)
    print("bye: the conversation is saved; run the same command to resume it.", file=out)
    return 0


def register(register: object) -> None:
    register(  # type: ignore[operator]
        "chat",
        help="talk with the agent interactively (streamed, interruptible, resumable)",
        configure=configure,
        run=run,
    )
