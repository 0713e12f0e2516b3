"""A session's inbox, folded: its commands in order and each one's current status.

The inbox holds two event types: ``inbox/command`` (a command accepted) and
``inbox/status`` (a command's progress). The fold's rules are what makes concurrent
writers safe without coordination beyond the append lease:

* a claim (``starting`` with attempt ``n``) counts only if ``n`` is above the current
  attempt: the first claim of an attempt wins, a second one is ignored;
* ``running`` and final statuses count only for the current attempt (a stale replica's
  report of an attempt that was taken over is ignored);
* the first final status wins; nothing moves a command out of a final status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import attrs
from hookagent.sessionlog import LogEvent

from .errors import UnknownCommand
from .model import FINAL, QUEUED_KINDS, CommandKind, TaskStatus, TaskView

COMMAND = "inbox/command"
STATUS = "inbox/status"


@attrs.define
class Entry:
    """One command and what happened to it (mutable: the fold's working copy)."""

    command_id: str
    key: str
    kind: CommandKind
    payload: Mapping[str, Any]
    digest: str
    seq: int
    submitted_at: float
    status: TaskStatus = "queued"
    attempt: int = 0
    run_id: str | None = None
    turn_id: str | None = None
    replica: str | None = None
    log_seq: int = 0
    """The session log's seq when the current attempt was claimed (its run's events follow)."""
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float | None = None
    error: str | None = None
    error_type: str | None = None
    reply: str | None = None
    generate_reason: str | None = None
    target: str | None = None

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def view(self) -> TaskView:
        return TaskView(
            self.command_id,
            self.kind,
            self.status,
            self.key,
            self.seq,
            self.submitted_at,
            turn_id=self.turn_id,
            run_id=self.run_id,
            started_at=self.started_at,
            finished_at=self.finished_at,
            updated_at=self.updated_at,
            error=self.error,
            error_type=self.error_type,
            reply_text=self.reply,
            generate_reason=self.generate_reason,
            replica_id=self.replica,
            target_run_id=self.target,
        )

    def apply_status(self, p: Mapping[str, Any], at: float) -> None:
        status = p.get("status")
        attempt = p.get("attempt")
        if self.final or not isinstance(status, str):
            return
        if status == "starting":
            if type(attempt) is not int or attempt <= self.attempt:
                return  # a second claim of the same attempt: the first one won
            self.attempt, self.status = attempt, "starting"
            self.run_id = _text(p, "run_id")
            self.replica = _text(p, "replica")
            self.log_seq = p.get("log_seq", 0) if type(p.get("log_seq")) is int else 0
            self.target = _text(p, "target") or self.target
            self.turn_id = _text(p, "turn_id") or self.turn_id
        elif attempt is not None and attempt != self.attempt:
            return  # a report on an attempt that was taken over
        elif status == "running":
            if self.status != "starting":
                return
            self.status = "running"
            self.started_at = at
            self.turn_id = _text(p, "turn_id") or self.turn_id
        elif status in FINAL:
            self.status = cast(TaskStatus, status)
            self.finished_at = at
            for name in ("error", "error_type", "reply", "turn_id", "target"):
                value = _text(p, name)
                if value is not None:
                    setattr(self, name, value)
            self.generate_reason = _text(p, "generate_reason")
        else:
            return
        self.updated_at = at


def _text(p: Mapping[str, Any], name: str) -> str | None:
    value = p.get(name)
    return value if isinstance(value, str) else None


@attrs.define
class InboxState:
    """One session's inbox as read up to ``seq``."""

    user_id: str
    session_id: str
    seq: int = 0
    commit_id: str | None = None
    entries: dict[str, Entry] = attrs.Factory(dict)
    order: list[str] = attrs.Factory(list)

    def apply(self, events: Iterable[LogEvent]) -> None:
        for e in events:
            self.seq = e.seq
            p = e.payload
            if e.type == COMMAND:
                cid = p.get("command_id")
                if not isinstance(cid, str) or cid in self.entries:
                    continue  # appended under the lease after a check: never a duplicate
                self.entries[cid] = Entry(
                    cid,
                    str(p.get("key", "")),
                    cast(CommandKind, str(p.get("kind"))),
                    dict(p.get("payload") or {}),
                    str(p.get("digest", "")),
                    e.seq,
                    float(p.get("submitted_at", e.occurred_at)),
                )
                self.order.append(cid)
            elif e.type == STATUS:
                entry = self.entries.get(str(p.get("command_id")))
                if entry is not None:
                    entry.apply_status(p, e.occurred_at)

    # ------------------------------------------------------------------ reading
    def entry(self, command_id: str) -> Entry:
        entry = self.entries.get(command_id)
        if entry is None:
            raise UnknownCommand(
                f"user_id={self.user_id!r} session_id={self.session_id!r}: no command "
                f"{command_id!r} in the inbox"
            )
        return entry

    def view(self, command_id: str) -> TaskView:
        return self.entry(command_id).view()

    def views(
        self, *, status: TaskStatus | Sequence[TaskStatus] | None = None, after_seq: int = 0
    ) -> list[TaskView]:
        wanted = {status} if isinstance(status, str) else set(status or ())
        out = []
        for cid in self.order:
            e = self.entries[cid]
            if e.seq > after_seq and (not wanted or e.status in wanted):
                out.append(e.view())
        return out

    def claimed(self) -> list[Entry]:
        """Commands claimed and not final, in inbox order (a steer waiting for the run it
        interrupted, and that run)."""
        return [
            e for cid in self.order if (e := self.entries[cid]).status in ("starting", "running")
        ]

    def running_entry(self) -> Entry | None:
        """The command whose run is (or is about to be) the session's live run."""
        claimed = self.claimed()
        for e in claimed:
            if e.status == "running":
                return e
        return claimed[0] if claimed else None

    def current(self) -> TaskView | None:
        e = self.running_entry()
        return e.view() if e is not None else None

    def next_queued(self) -> Entry | None:
        """The first queued command that runs in order (submit, resume, respond)."""
        for cid in self.order:
            e = self.entries[cid]
            if e.status == "queued" and e.kind in QUEUED_KINDS:
                return e
        return None

    def controls(self) -> list[Entry]:
        """Queued ``steer`` and ``interrupt`` commands, in inbox order."""
        return [
            e
            for cid in self.order
            if (e := self.entries[cid]).status == "queued" and e.kind not in QUEUED_KINDS
        ]

    def unfinished(self) -> bool:
        return any(not self.entries[cid].final for cid in self.order)

    def by_run(self, run_id: str | None) -> Entry | None:
        """The command whose current attempt is ``run_id``."""
        for cid in reversed(self.order):
            e = self.entries[cid]
            if run_id is not None and e.run_id == run_id:
                return e
        return None

    def latest_turn(self, before_seq: int) -> Entry | None:
        """The last command before ``before_seq`` whose run reached a turn."""
        for cid in reversed(self.order):
            e = self.entries[cid]
            if e.seq < before_seq and e.turn_id is not None and e.status != "rejected":
                return e
        return None
