"""hookagent's JSON-file state store: crash-safe files on local disk, fsspec elsewhere."""

from .config import STATE_HOME_ENV, default_root, open_store, state_home
from .local import LocalJsonFileStore
from .remote import FsspecJsonFileStore

__all__ = [
    "STATE_HOME_ENV",
    "FsspecJsonFileStore",
    "LocalJsonFileStore",
    "default_root",
    "open_store",
    "state_home",
]
