"""``hookagent sessions list|show|clear|delete|export|import``: a user's stored sessions."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
from hookagent import UNCONDITIONAL, AgentConfig, AgentState, VersionConflict
from hookagent.state import History
from hookagent.store import MAX_PAGE_LIMIT
from hookagent.store.ids import check_id

from .errors import SessionExists, SessionNotFound
from .options import DEFAULT_USER, add_common, build_config, describe_store, slot
from .render import as_json, show_state
from .statefile import EXPORTS, FORMATS, read_state, write_state


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="list a user's session ids (paginated)")
    p.add_argument("--limit", type=int, default=50, help="page size (default 50)")
    p.add_argument("--cursor", default=None, help="continue after this cursor")
    p.add_argument("--all", action="store_true", help="follow every page")
    p.add_argument("--long", "-l", action="store_true", help="add version and message count")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    sub.add_parser("show", help="show a session's conversation and sections readably")
    sub.add_parser("clear", help="clear the history and summary (other sections stay)")
    p = sub.add_parser("delete", help="delete the session from the store")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p = sub.add_parser("export", help="print the session as JSON (or write it to a file)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically)")
    p.add_argument(
        "--to",
        choices=EXPORTS,
        default="hookagent",
        help="the format: ours (default), AgentScope's (Python 2.x spelling) or agentscope-java",
    )
    p = sub.add_parser("import", help="create a session from exported JSON")
    p.add_argument("file", help="the JSON file ('-' for stdin)")
    p.add_argument("--force", action="store_true", help="overwrite an existing session")
    p.add_argument(
        "--from",
        dest="source_format",
        choices=FORMATS,
        default="auto",
        help="the file's format (default: recognised from its content)",
    )
    for action in sub.choices.values():
        add_common(action)


def run(args: argparse.Namespace) -> int:
    if args.action == "delete" and not args.yes and sys.stdin.isatty():
        user, session = slot(args)
        answer = input(f"delete session {session!r} of user {user!r}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not deleted")
            return 1
    if args.action == "import":
        path = args.file
        args.payload = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    config = build_config(args, model=None, tools=())
    handler: Callable[[argparse.Namespace, Any, AgentConfig], Awaitable[int]] = ACTIONS[args.action]

    async def main() -> int:
        try:
            store = await config.kernel.store()
            return await handler(args, store, config)
        finally:
            await config.aclose()

    return anyio.run(main)


async def _list(args: argparse.Namespace, store: Any, config: AgentConfig) -> int:
    user = check_id(DEFAULT_USER if args.user is None else args.user, "user_id", allow_empty=True)
    if not 1 <= args.limit <= MAX_PAGE_LIMIT:
        raise ValueError(f"--limit must be between 1 and {MAX_PAGE_LIMIT}, got {args.limit}")
    ids: list[str] = []
    cursor = args.cursor
    while True:
        page = await store.list_session_ids(user, limit=args.limit, cursor=cursor)
        ids += page.session_ids
        cursor = page.next_cursor
        if not args.all or cursor is None:
            break
        print(f"… {len(ids)} sessions so far", file=sys.stderr, flush=True)
    rows: list[dict[str, Any]] = []
    for sid in ids:
        row: dict[str, Any] = {"session_id": sid}
        if args.long:
            got = await store.get_versioned(user, sid)
            row["version"] = got.version
            row["messages"] = len(got.state.context) if got.state else 0
        rows.append(row)
    if args.json:
        print(as_json({"user_id": user, "sessions": rows, "next_cursor": cursor}))
        return 0
    for row in rows:
        extra = f"\tversion {row['version']}\t{row['messages']} messages" if args.long else ""
        print(f"{row['session_id']}{extra}")
    if cursor is not None:
        print(f"next cursor: {cursor}", file=sys.stderr)
    elif not rows:
        print(
            f"(no sessions for user {user!r} in {describe_store(config, store)})", file=sys.stderr
        )
    return 0


async def _load(args: argparse.Namespace, store: Any) -> tuple[str, str, AgentState, int]:
    user, session = slot(args)
    got = await store.get_versioned(user, session)
    if got.state is None:
        raise SessionNotFound(user, session)
    return user, session, got.state, got.version


async def _show(args: argparse.Namespace, store: Any, config: AgentConfig) -> int:
    _, _, state, version = await _load(args, store)
    show_state(state, version, sys.stdout)
    return 0


async def _clear(args: argparse.Namespace, store: Any, config: AgentConfig) -> int:
    user, session = slot(args)
    async with config.build() as agent:
        if not await agent.clear_context(user, session):
            raise SessionNotFound(user, session)
    print(f"cleared the history of session {session!r} (other sections kept)")
    return 0


async def _delete(args: argparse.Namespace, store: Any, config: AgentConfig) -> int:
    user, session = slot(args)
    if not await store.delete(user, session):
        raise SessionNotFound(user, session)
    print(f"deleted session {session!r} of user {user!r}")
    return 0


async def _export(args: argparse.Namespace, store: Any, config: AgentConfig) -> int:
    _, session, state, version = await _load(args, store)
    text = write_state(state, args.to)
    if args.output:
        _write_atomically(Path(args.output), text)
        print(f"exported session {session!r} (version {version}) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text + "\n")
    return 0


async def _import(args: argparse.Namespace, store: Any, config: AgentConfig) -> int:
    """Into the slot named by --user/--session (default: the file's), never elsewhere.

    The state is re-addressed explicitly, with a fresh History that nothing has stored yet
    (so every message is written); without --force an existing slot is never overwritten.
    """
    source = "stdin" if args.file == "-" else args.file
    state, kind = read_state(args.payload, source, args.source_format)
    was = (state.user_id, state.session_id)
    user = was[0] if args.user is None else check_id(args.user, "user_id", allow_empty=True)
    session = was[1] if args.session is None else check_id(args.session, "session_id")
    state = attrs.evolve(
        state, user_id=user, session_id=session, context=History(list(state.context))
    )
    expected: Any = UNCONDITIONAL if args.force else 0
    gate = config.session_gate or config.kernel.gate
    async with gate.acquire(user, session) as fence:
        try:
            version = await store.save_if_version(user, session, state, expected, fence=fence)
        except VersionConflict as exc:
            raise SessionExists(user, session, exc.actual) from exc
    moved = (
        ""
        if (user, session) == was
        else (f" (re-addressed: the file is session {was[1]!r} of user {was[0]!r})")
    )
    print(
        f"imported {'an AgentScope state' if kind == 'agentscope' else 'the session'} into "
        f"session {session!r} of user {user!r}: version {version}{moved}"
    )
    return 0


def _write_atomically(path: Path, text: str) -> None:
    path = path.expanduser()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


ACTIONS: dict[str, Callable[[argparse.Namespace, Any, AgentConfig], Awaitable[int]]] = {
    "list": _list,
    "show": _show,
    "clear": _clear,
    "delete": _delete,
    "export": _export,
    "import": _import,
}
