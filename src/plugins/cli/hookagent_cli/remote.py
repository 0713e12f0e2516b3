"""``hookagent chat|run --server URL``: the same commands through a ``hookagent serve``.

The server owns the sessions (its session log and inbox), so the CLI, the web inspector and
any other client continue the same conversations. Stdlib HTTP only (no new dependency).
Every message is sent with a fresh idempotency key, so a retried request never runs twice.
The user is whoever the token authenticates (``--user`` is refused: the server decides).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import urllib.parse
from collections.abc import Iterator
from typing import Any, TextIO

from hookagent import Answer, Approve, ExternalResult, Reject
from hookagent.errors import HookagentError
from hookagent.messages import new_id

from .answers import SUSPENDED_EXIT, ask_in_chat, describe
from .options import DEFAULT_SESSION

FINAL = frozenset({"completed", "suspended", "interrupted", "failed", "rejected"})


class ServerError(HookagentError):
    """The server refused a request (its typed error body, or an unreadable answer)."""

    def __init__(self, status: int, type: str, message: str) -> None:
        super().__init__(f"{status} {type}: {message}")
        self.status, self.type = status, type


def add_server_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("through a server (hookagent serve)")
    group.add_argument(
        "--server",
        metavar="URL",
        default=os.environ.get("HOOKAGENT_SERVER") or None,
        help="talk to this hookagent server instead of running the agent here "
        "(default: $HOOKAGENT_SERVER)",
    )
    group.add_argument(
        "--token",
        default=os.environ.get("HOOKAGENT_SERVER_TOKEN") or None,
        help="the bearer token for --server (default: $HOOKAGENT_SERVER_TOKEN)",
    )


class Remote:
    """One session on the server."""

    def __init__(self, args: argparse.Namespace) -> None:
        if args.user is not None:
            raise ValueError("--user is not used with --server: the server's token decides")
        self.base = urllib.parse.urlsplit(args.server)
        if self.base.scheme not in ("http", "https") or not self.base.netloc:
            raise ValueError(f"--server expects http(s)://host:port, got {args.server!r}")
        self.token = args.token
        self.session = args.session if args.session is not None else DEFAULT_SESSION
        self.prefix = (
            f"{self.base.path.rstrip('/')}/v1/sessions/{urllib.parse.quote(self.session, safe='')}"
        )

    def _conn(self, timeout: float | None) -> http.client.HTTPConnection:
        cls = (
            http.client.HTTPSConnection
            if self.base.scheme == "https"
            else http.client.HTTPConnection
        )
        return cls(self.base.netloc, timeout=timeout)

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        h = {"Accept": "application/json", **(extra or {})}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        return h

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = self._headers({"Content-Type": "application/json"} if data else None)
        for attempt in (1, 2):  # every command carries an idempotency key: a resend is safe
            conn = self._conn(60)
            try:
                conn.request(method, self.prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (ConnectionError, http.client.HTTPException, TimeoutError):
                conn.close()
                if attempt == 2:
                    raise
                continue
            conn.close()
            return _decode(resp.status, raw)
        raise AssertionError("unreachable")

    def events(self, command_id: str, after: str | None) -> Iterator[tuple[str, str | None, Any]]:
        """The run stream: (event, id, data) until ``SESSION_TASK_FINAL``."""
        conn = self._conn(None)
        headers = self._headers({"Accept": "text/event-stream"})
        if after is not None:
            headers["Last-Event-ID"] = after
        try:
            conn.request("GET", f"{self.prefix}/runs/{command_id}/events", headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                _decode(resp.status, resp.read())
            fields: dict[str, str] = {}
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line and not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
                elif not line and "data" in fields:
                    yield fields.get("event", ""), fields.get("id"), json.loads(fields["data"])
                    fields = {}
        finally:
            conn.close()

    def submit(self, text: str) -> dict[str, Any]:
        view: dict[str, Any] = self.call("POST", "/runs", {"input": text, "idempotency_key": key()})
        return view

    def answer(self, answer: Answer) -> dict[str, Any]:
        doc: dict[str, Any]
        if isinstance(answer, Approve):
            doc = {"kind": "approve", "remember": answer.remember}
        elif isinstance(answer, Reject):
            doc = {"kind": "reject", "reason": str(answer.reason)}
        elif isinstance(answer, ExternalResult):
            doc = {"kind": "external_result", "output": str(answer.output), "state": answer.state}
        else:
            raise ValueError(f"cannot send {type(answer).__name__} to a server")
        rid = urllib.parse.quote(answer.tool_use_id, safe="")
        view: dict[str, Any] = self.call(
            "POST", f"/interactions/{rid}", {"answer": doc, "idempotency_key": key()}
        )
        return view

    def follow(self, view: dict[str, Any], progress: TextIO) -> dict[str, Any]:
        """Stream the command's run to its final view; Ctrl-C interrupts it (twice: leave)."""
        cid, last = view["command_id"], None
        interrupted = False
        while True:
            try:
                for event, eid, data in self.events(cid, last):
                    last = eid or last
                    if event == "SESSION_TASK_FINAL":
                        return dict(data)
                    _progress(event, data, progress)
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                print("\n^C interrupting… (Ctrl-C again to quit)", file=progress, flush=True)
                try:
                    self.call("POST", f"/runs/{cid}/interrupt", {"idempotency_key": key()})
                except ServerError as exc:  # it ended meanwhile: the stream says how
                    if exc.status != 409:
                        raise
            except (ConnectionError, http.client.HTTPException):
                continue  # reconnect: Last-Event-ID resumes after the last event seen

    def pending(self) -> list[dict[str, Any]]:
        return list(self.call("GET", "/interactions")["interactions"])


def key() -> str:
    return f"cli-{new_id()}"


def _decode(status: int, raw: bytes) -> Any:
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        raise ServerError(status, "BadResponse", raw[:200].decode(errors="replace")) from None
    if status >= 400:
        err = doc.get("error", {}) if isinstance(doc, dict) else {}
        raise ServerError(status, str(err.get("type", "HTTPError")), str(err.get("message", "")))
    return doc


def _progress(event: str, data: dict[str, Any], out: TextIO) -> None:
    p = data.get("payload", {})
    if event == "SESSION_TOOL_DISPATCH":
        print(f"  · {p.get('name')} …", file=out, flush=True)
    elif event == "SESSION_TOOL_RESULT":
        block = (p.get("m", {}).get("content") or [{}])[0]
        print(
            f"  · {block.get('name', 'tool')}: {block.get('state', 'done')}", file=out, flush=True
        )


def run_remote(args: argparse.Namespace, text: str | None, answers: list[Answer]) -> int:
    """``hookagent run --server``: one message (or the answers) in, the reply out."""
    remote = Remote(args)
    progress: TextIO = open(os.devnull, "w") if args.quiet or args.json else sys.stderr
    try:
        if text is not None:
            views = [remote.submit(text)]
        else:
            views = [remote.answer(a) for a in answers]
        try:
            view = remote.follow(views[-1], progress)
        except KeyboardInterrupt:
            print("hookagent: left; the server goes on with the run", file=sys.stderr)
            return 130
    finally:
        if progress is not sys.stderr:
            progress.close()
    pending = remote.pending() if view["status"] == "suspended" else []
    if args.json:
        print(json.dumps({**_summary(view, remote.session), "pending": pending}, indent=2))
    elif pending:
        print(f"the turn waits for {len(pending)} answer(s):")
        describe(pending, sys.stdout)
    elif view["status"] in ("failed", "rejected"):
        raise ServerError(200, view.get("error_type") or view["status"], view.get("error") or "")
    else:
        print(view.get("reply_text") or "")
    if pending:
        return SUSPENDED_EXIT
    return 130 if view["status"] == "interrupted" else 0


def _summary(view: dict[str, Any], session: str) -> dict[str, Any]:
    return {
        "reply": view.get("reply_text"),
        "generate_reason": view.get("generate_reason"),
        "status": view["status"],
        "command_id": view["command_id"],
        "run_id": view.get("run_id"),
        "turn_id": view.get("turn_id"),
        "session_id": session,
        "error": view.get("error"),
    }


def chat_remote(args: argparse.Namespace, read_line: Any) -> int:
    """``hookagent chat --server``: the chat loop, each message a queued run on the server."""
    remote = Remote(args)
    out = sys.stdout
    print(f"hookagent chat: session {remote.session!r} on {args.server}", file=out)
    print("Ctrl-C interrupts a reply; Ctrl-C again or Ctrl-D leaves. /clear, /exit.", file=out)
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
        if text == "/clear":
            remote.call("POST", "/clear")
            print("context cleared (other sections kept)", file=out)
            continue
        try:
            view = remote.follow(remote.submit(text), out)
            while view["status"] == "suspended":
                answers = ask_in_chat(remote.pending(), lambda p: read_line(p, out), out)
                if not answers:
                    print("  (still waiting; answer later in chat or with hookagent run)", file=out)
                    break
                views = [remote.answer(a) for a in answers]
                view = remote.follow(views[-1], out)
        except KeyboardInterrupt:
            print("\nleaving; the server keeps the session.", file=out)
            return 130
        except ServerError as exc:
            print(f"  · failed: {exc}", file=out)
            continue
        if view["status"] in ("failed", "rejected"):
            print(f"  · {view['status']}: {view.get('error_type')}: {view.get('error')}", file=out)
        elif view["status"] != "suspended":
            suffix = " (interrupted)" if view["status"] == "interrupted" else ""
            print(f"agent> {view.get('reply_text') or ''}{suffix}", file=out)
    print("bye: the conversation stays on the server; run the same command to go on.", file=out)
    return 0
