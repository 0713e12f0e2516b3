"""``hookagent chat``: an interactive, resumable conversation with streamed replies.

Ctrl-C during a reply interrupts it (the kernel closes open tool calls as ``interrupted`` and
saves); Ctrl-C again, Ctrl-C or Ctrl-D at the prompt, or ``/exit`` leaves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import sys
from collections.abc import Iterator

from .answers import ask_in_chat, pending_of
from .options import build_config, describe_store, slot
from .printer import EventPrinter, ToolResultTap
from .remote import add_server_options, chat_remote
from .render import history_lines, show_state
from .runner import CallRunner, Leave

HELP = "/history shows the conversation, /clear clears it, /exit leaves"
AFTER_ERROR = "type another message to go on, or /exit to leave"


def one_line(exc: BaseException) -> str:
    """``TypeName: message`` on one line, as ``hookagent: error:`` prints it."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or '(no message)'}"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history", type=int, default=6, metavar="N", help="show the last N messages on resume"
    )
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    if args.server:
        return chat_remote(args, read_line)
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
                line = read_line("you> ", out)
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
            except Exception as exc:  # a model or store error ends this call, not the chat
                printer.line(f"{printer.indent}· failed: {one_line(exc)}")
                printer.line(f"{printer.indent}  (your message was saved; {AFTER_ERROR})")
                continue
            while pending := pending_of(reply):
                answers = ask_in_chat(pending, lambda prompt: read_line(prompt, out), out)
                if not answers:
                    print("  (still waiting; answer later in chat or with hookagent run)", file=out)
                    break
                try:
                    reply = runner.call(None, printer, answers=answers)
                except Leave:
                    print("\nleaving; the state was saved.", file=out)
                    return 130
                except Exception as exc:
                    printer.line(f"{printer.indent}· failed: {one_line(exc)}")
                    break
            else:
                printer.reply(reply.id, reply.text)
    print("bye: the conversation is saved; run the same command to resume it.", file=out)
    return 0


@contextlib.contextmanager
def _signal_wakeup() -> Iterator[int]:
    """A pipe the C-level signal handler writes to: a Ctrl-C wakes up ``select`` at once."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    try:
        yield r
    finally:
        signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)


def read_line(prompt: str, out: object) -> str:
    """``input()`` without its race: a SIGINT that lands after the prompt is printed but
    before the read starts would leave ``input()`` blocked; here it wakes ``select`` and
    Python raises ``KeyboardInterrupt`` as soon as ``select`` returns."""
    print(prompt, end="", file=out, flush=True)  # type: ignore[call-overload]
    with _signal_wakeup() as wake:
        while True:
            ready, _, _ = select.select([sys.stdin, wake], [], [])
            if wake in ready:
                os.read(wake, 512)
                continue  # the Python-level handler has raised KeyboardInterrupt by now
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")
