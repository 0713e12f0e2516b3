"""hookagent's JSON-file state store: crash-safe files on local disk, fsspec elsewhere."""

from .local import LocalJsonFileStore

__all__ = ["LocalJsonFileStore"]
