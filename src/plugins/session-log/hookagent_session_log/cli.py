"""``hookagent log show|tail|export|reconcile|fork|import|export-state`` (needs hookagent-cli).

One line an event: ``seq  time  type  run  turn  summary``; ``--json`` prints JSON lines
(``show``, ``tail``) or one document. The log is ``--log URL`` or ``$HOOKAGENT_SESSION_LOG``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio
from hookagent.sessionlog import LogEvent, open_session_log
from hookagent.store.ids import check_id

from . import catalogue as c
from .admin import FileWatermark, JsonlSink, SessionLogAdmin, ToolOutcome, event_json


def configure(parser: argparse.ArgumentParser) -> None:
    from hookagent_cli.options import DEFAULT_SESSION, DEFAULT_USER  # the other commands' slot

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="the session's events, one a line")
    tail = sub.add_parser("tail", help="the newest events; --follow waits for more")
    tail.add_argument("-n", type=int, default=20, help="how many (default 20)")
    tail.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    for p in (show, tail):
        p.add_argument("--after", type=int, default=0, metavar="SEQ")
        p.add_argument("--run-id")
        p.add_argument("--turn-id")
        p.add_argument(
            "--type", action="append", default=[], help="a type, or a prefix ending in /"
        )
    exp = sub.add_parser(
        "export", help="append the events after the watermark to a JSON-lines file"
    )
    exp.add_argument("--to", required=True, metavar="FILE.jsonl")
    exp.add_argument("--watermark", metavar="FILE", help="default: FILE.jsonl.watermark")
    rec = sub.add_parser("reconcile", help="say what happened to the uncertain tool calls")
    rec.add_argument("outcomes", nargs="*", metavar="ID=STATE[:TEXT]")
    rec.add_argument("--reason", required=True)
    fork = sub.add_parser("fork", help="a new session starting from this one's state")
    fork.add_argument("new_session")
    imp = sub.add_parser("import", help="migrate a state store's session into its empty log")
    imp.add_argument("--store", required=True, metavar="URL")
    sub.add_parser("export-state", help="print the state the log rebuilds, as JSON")
    for p in sub.choices.values():
        p.add_argument(
            "--log",
            default=os.environ.get("HOOKAGENT_SESSION_LOG"),
            metavar="URL",
            help="the session log URL (default: $HOOKAGENT_SESSION_LOG)",
        )
        p.add_argument("--user", default=DEFAULT_USER, help=f"user_id (default: {DEFAULT_USER})")
        p.add_argument(
            "--session", default=DEFAULT_SESSION, help=f"session_id (default: {DEFAULT_SESSION})"
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")


def line(e: LogEvent) -> str:
    at = time.strftime("%H:%M:%S", time.localtime(e.occurred_at)) if e.occurred_at else "--:--:--"
    run = (e.run_id or "-")[:8]
    turn = (e.turn_id or "-")[:8]
    return f"{e.seq:>6}  {at}  {e.type:<20} run={run:<8} turn={turn:<8} {summary(e)}"


def summary(e: LogEvent) -> str:
    p = e.payload
    if e.type == c.MESSAGE:
        m = p.get("m", {})
        text = " ".join(b.get("text", "") for b in m.get("content", []) if isinstance(b, dict))
        uses = [
            b.get("name")
            for b in m.get("content", [])
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        results = [
            f"{b.get('name')}:{b.get('state', 'success')}"
            for b in m.get("content", [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        bits = [m.get("role", "?")]
        if text.strip():
            bits.append(repr(text.strip()[:60]))
        if uses:
            bits.append("calls " + ", ".join(map(str, uses)))
        if results:
            bits.append("results " + ", ".join(results))
        return " ".join(bits)
    if e.type in (c.TOOL_DISPATCH,):
        return f"{p.get('name')} ({p.get('id')})"
    if e.type == c.TOOL_RESULT:
        m = p.get("m", {}).get("content", [{}])[0]
        return f"{m.get('name')} ({p.get('id')}) {m.get('state', 'success')}"
    if e.type == "state/checkpoint":
        return f"history={p.get('history')} base={p.get('base')}"
    if e.type == c.REPLACED:
        return f"{len(p.get('ms', []))} messages ({p.get('reason')})"
    if e.type == c.RUN_FINISHED:
        return str(p.get("outcome"))
    return json.dumps(p, ensure_ascii=False)[:80] if p else ""


def _outcomes(pairs: list[str]) -> dict[str, ToolOutcome]:
    out = {}
    for pair in pairs:
        key, sep, rest = pair.partition("=")
        state, _, text = rest.partition(":")
        if not sep or not key:
            raise ValueError(f"expected ID=STATE[:TEXT], got {pair!r}")
        out[key] = ToolOutcome(state, text)  # type: ignore[arg-type]
    return out


def run(args: argparse.Namespace) -> int:
    if not args.log:
        print(
            "hookagent log: name the log with --log URL or $HOOKAGENT_SESSION_LOG", file=sys.stderr
        )
        return 2
    user = check_id(args.user, "user_id", allow_empty=True)
    session = check_id(args.session, "session_id")

    async def main() -> int:
        log = await open_session_log(args.log)
        try:
            code: int = await ACTIONS[args.action](SessionLogAdmin(log), user, session, args)
            return code
        finally:
            await log.aclose()

    return anyio.run(main)


def _print(events: list[LogEvent], as_json: bool) -> None:
    for e in events:
        print(json.dumps(event_json(e), ensure_ascii=False) if as_json else line(e), flush=True)


async def _show(admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace) -> int:
    events = await admin.events(
        user, session, after=args.after, run_id=args.run_id, turn_id=args.turn_id, types=args.type
    )
    _print(events, args.json)
    if not args.json:
        unc = await admin.uncertain(user, session)
        if unc:
            print(
                f"uncertain: {', '.join(f'{u.name} ({u.id})' for u in unc)} -- hookagent log reconcile"
            )
    return 0


async def _tail(admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace) -> int:
    events = await admin.events(
        user, session, after=args.after, run_id=args.run_id, turn_id=args.turn_id, types=args.type
    )
    _print(events[-args.n :] if args.n > 0 else [], args.json)
    seq = (await admin.log.head(user, session)).seq
    while args.follow:
        await anyio.sleep(0.5)
        more = await admin.events(
            user, session, after=seq, run_id=args.run_id, turn_id=args.turn_id, types=args.type
        )
        _print(more, args.json)
        seq = max([seq, *(e.seq for e in more)])
        seq = max(seq, (await admin.log.head(user, session)).seq)
    return 0


async def _export(admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace) -> int:
    mark = FileWatermark(args.watermark or f"{args.to}.watermark")
    sent = await admin.export(user, session, JsonlSink(args.to), mark)
    print(
        json.dumps({"exported": sent, "watermark": await mark.get()})
        if args.json
        else f"exported {sent} event(s) to {args.to} (watermark {await mark.get()})"
    )
    return 0


async def _reconcile(
    admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace
) -> int:
    if not args.outcomes:
        unc = await admin.uncertain(user, session)
        for u in unc:
            print(f"{u.id}  {u.name}  {json.dumps(dict(u.input), ensure_ascii=False)[:100]}")
        if not unc:
            print("nothing is uncertain")
        return 0 if not unc else 1
    seq = await admin.reconcile(user, session, _outcomes(args.outcomes), args.reason)
    print(json.dumps({"seq": seq}) if args.json else f"reconciled; the log is at seq {seq}")
    return 0


async def _fork(admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace) -> int:
    seq = await admin.fork(user, session, check_id(args.new_session, "session_id"))
    print(
        json.dumps({"session": args.new_session, "seq": seq})
        if args.json
        else f"forked {session} -> {args.new_session} (seq {seq})"
    )
    return 0


async def _import(admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace) -> int:
    from hookagent.store.open import open_store

    store = await open_store(args.store)
    try:
        seq = await admin.import_from_store(store, user, session)
    finally:
        await store.aclose()
    print(
        json.dumps({"seq": seq})
        if args.json
        else f"imported {session} from {args.store} (seq {seq})"
    )
    return 0


async def _export_state(
    admin: SessionLogAdmin, user: str, session: str, args: argparse.Namespace
) -> int:
    state = await admin.export_state(user, session)
    print(state.to_json())
    return 0


ACTIONS: dict[str, Any] = {
    "show": _show,
    "tail": _tail,
    "export": _export,
    "reconcile": _reconcile,
    "fork": _fork,
    "import": _import,
    "export-state": _export_state,
}
