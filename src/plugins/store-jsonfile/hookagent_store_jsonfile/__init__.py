"""hookagent's JSON-file state store: crash-safe files on local disk, fsspec elsewhere."""

from .config import STATE_HOME_ENV, default_root, open_store, state_home
from .local import LocalJsonFileStore
from .remote import FsspecJsonFileStore
from .sessionlog import FsspecJsonFileSessionLog, JsonFileSessionLog, open_session_log

__all__ = [
    "STATE_HOME_ENV",
    "FsspecJsonFileSessionLog",
    "FsspecJsonFileStore",
    "JsonFileSessionLog",
    "LocalJsonFileStore",
    "default_root",
    "open_session_log",
    "open_store",
    "state_home",
]
