"""The decisions every log backend makes the same way; a backend only stores what they say.

A backend reads the head (and, for a batch_id it has seen, that commit's digest and seqs)
inside its atomic step (a transaction, a Lua script, a lock), asks ``plan_commit``, and
writes the commit and then the head exactly as the returned ``CommitPlan`` says. Doing the
checks here keeps the rules identical across backends; doing them inside the backend's
atomic step keeps them true under races.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from ..errors import (
    BatchConflict,
    InvalidStoreArgument,
    LeaseHeld,
    LogFenced,
    OwnerSealed,
    StalePrefix,
)
from ..store.ids import check_id, slot_name
from .base import CHECKPOINT, CommitResult, LogEvent, LogHead, LogWriter
from .batch import BuiltBatch, batch_digest, encode_batch

MAX_LEASE_SECONDS = 24 * 3600.0


def check_session(user_id: object, session_id: object) -> None:
    check_id(user_id, "user_id", allow_empty=True)
    check_id(session_id, "session_id")


def check_owner(owner: object) -> str:
    try:
        return check_id(owner, "log writer owner")
    except Exception as exc:
        raise InvalidStoreArgument(str(exc)) from None


def check_lease(lease_seconds: object) -> float:
    if (
        type(lease_seconds) not in (int, float)
        or not math.isfinite(lease_seconds)  # type: ignore[arg-type]
        or not 0 < lease_seconds <= MAX_LEASE_SECONDS  # type: ignore[operator]
    ):
        raise InvalidStoreArgument(
            f"lease_seconds must be a number in (0, {MAX_LEASE_SECONDS:g}], got {lease_seconds!r}"
        )
    return float(lease_seconds)  # type: ignore[arg-type]


def check_writer(writer: object) -> LogWriter:
    if not isinstance(writer, LogWriter):
        raise InvalidStoreArgument(f"expected a LogWriter from acquire(), got {writer!r}")
    check_session(writer.user_id, writer.session_id)
    check_owner(writer.owner)
    if type(writer.epoch) is not int or writer.epoch < 1:
        raise InvalidStoreArgument(f"a LogWriter's epoch is an int >= 1, got {writer.epoch!r}")
    return writer


def check_after(seq: object, limit: object) -> None:
    if type(seq) is not int or seq < 0:
        raise InvalidStoreArgument(f"read_after's seq is an int >= 0, got {seq!r}")
    if limit is not None and (type(limit) is not int or limit < 1):
        raise InvalidStoreArgument(f"read_after's limit is None or an int >= 1, got {limit!r}")


def check_batch_id(batch_id: object) -> str:
    try:
        return check_id(batch_id, "batch_id")
    except Exception as exc:
        raise InvalidStoreArgument(str(exc)) from None


def plan_acquire(
    head: LogHead,
    user_id: str,
    session_id: str,
    owner: str,
    now: float,
    lease: float,
    *,
    sealed: bool,
) -> LogHead:
    """The head after ``owner`` acquires the lease (raises ``LeaseHeld``/``OwnerSealed``)."""
    if sealed:
        raise OwnerSealed(
            f"{slot_name(user_id, session_id, 'log')}: owner {owner!r} is sealed (a finished "
            "run's id is never reused)"
        )
    if head.owner is not None and head.owner != owner and head.lease_until > now:
        raise LeaseHeld(
            f"{slot_name(user_id, session_id, 'log')}: the writer lease is held by "
            f"{head.owner!r} for {head.lease_until - now:.1f}s more (epoch {head.epoch})"
        )
    return LogHead(
        head.seq, head.epoch + 1, owner, now + lease, head.commit_id, head.checkpoint_seq
    )


def holds(head: LogHead, writer: LogWriter, now: float) -> bool:
    """True when ``writer`` holds the lease at ``now`` (epoch, owner and time)."""
    return head.epoch == writer.epoch and head.owner == writer.owner and head.lease_until > now


def check_holds(head: LogHead, writer: LogWriter, now: float, what: str) -> None:
    if not holds(head, writer, now):
        where = slot_name(writer.user_id, writer.session_id, "log")
        why = (
            "its lease expired"
            if head.epoch == writer.epoch and head.owner == writer.owner
            else f"the lease is now epoch {head.epoch} held by {head.owner!r}"
        )
        raise LogFenced(
            f"{where}: {what} by {writer.owner!r} (epoch {writer.epoch}) refused: {why}"
        )


@attrs.frozen
class CommitPlan:
    """What a backend writes: ``data`` at ``first_seq`` (keyed with ``batch_id`` and
    ``digest``), then ``head``. ``result`` is set instead when nothing is to be written
    (the batch was already committed with this content)."""

    first_seq: int
    last_seq: int
    data: bytes
    digest: str
    head: LogHead
    result: CommitResult | None = None
    seal: str | None = None
    """An owner to seal in the same atomic step (``commit(..., finish=True)``)."""


def encode_commit(events: Sequence[LogEvent]) -> tuple[bytes, str]:
    """The batch's bytes and digest, computed before the backend's atomic step (a
    ``BuiltBatch`` carries them already: its builder made and checked its envelopes)."""
    if type(events) is BuiltBatch:
        return events.data, events.digest
    for e in events if isinstance(events, Sequence) else ():
        if isinstance(e, LogEvent) and e.seq != 0:
            raise InvalidStoreArgument(f"event {e.event_id} was already committed (seq {e.seq})")
    data = encode_batch(events)
    return data, batch_digest(data)


def plan_commit(
    head: LogHead,
    writer: LogWriter,
    batch_id: str,
    expected_seq: int,
    events: Sequence[LogEvent],
    data: bytes,
    digest: str,
    now: float,
    *,
    prior: tuple[int, int, str] | None,
    finish: bool = False,
) -> CommitPlan:
    """Decide a commit. ``prior`` is (first_seq, last_seq, digest) of the commit already
    stored under ``batch_id`` if the head reached it (an orphan is not a prior)."""
    if prior is not None and prior[1] <= head.seq:
        first, last, old = prior
        if old != digest:
            raise BatchConflict(
                f"{slot_name(writer.user_id, writer.session_id, 'log')}: batch {batch_id!r} "
                f"was committed at seqs {first}..{last} with other content; a retry must "
                "resend the same events"
            )
        result = CommitResult(first, last, head, duplicate=True)
        return CommitPlan(first, last, b"", digest, head, result)
    check_holds(head, writer, now, "commit")
    if type(expected_seq) is not int or expected_seq != head.seq:
        raise StalePrefix(
            f"{slot_name(writer.user_id, writer.session_id, 'log')}: commit expected head seq "
            f"{expected_seq!r}, the log is at {head.seq}",
            expected=expected_seq if type(expected_seq) is int else -1,
            actual=head.seq,
        )
    first, last = head.seq + 1, head.seq + len(events)
    checkpoint = head.checkpoint_seq
    for i in range(len(events) - 1, -1, -1):
        if events[i].type == CHECKPOINT:
            checkpoint = first + i
            break
    if finish:  # the writer's last commit: the lease ends with it (the backend seals the owner)
        new_head = LogHead(last, head.epoch, None, 0.0, batch_id, checkpoint)
        return CommitPlan(first, last, data, digest, new_head, seal=writer.owner)
    new_head = LogHead(last, head.epoch, head.owner, head.lease_until, batch_id, checkpoint)
    return CommitPlan(first, last, data, digest, new_head)
