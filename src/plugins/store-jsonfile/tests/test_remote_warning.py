"""``writers="multi"`` warns where the exclusive create cannot be verified atomic (issue 13:
on a backend whose ``"xb"`` is a check-then-put, two hosts can both be acknowledged)."""

from __future__ import annotations

import uuid
import warnings

import pytest
from fsspec.implementations.memory import MemoryFileSystem  # type: ignore[import-untyped]
from hookagent_store_jsonfile import FsspecJsonFileStore
from hookagent_store_jsonfile.remote import UnverifiedConditionalWrites


class ObjectStoreLike(MemoryFileSystem):  # type: ignore[misc]
    """In-memory, under a protocol name this store has not verified."""

    protocol = ("objstore-like",)
    cachable = False


def test_multi_writer_on_an_unverified_backend_warns() -> None:
    with pytest.warns(UnverifiedConditionalWrites, match="one save is lost with no error"):
        FsspecJsonFileStore(f"/w-{uuid.uuid4().hex}", writers="multi", fs=ObjectStoreLike())


def test_verified_backends_and_single_writer_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedConditionalWrites)
        FsspecJsonFileStore(f"memory://w-{uuid.uuid4().hex}", writers="multi")
        FsspecJsonFileStore(f"/w-{uuid.uuid4().hex}", writers="single", fs=ObjectStoreLike())
