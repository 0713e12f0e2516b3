"""hookagent's JSON-file state store: crash-safe files on local disk, fsspec elsewhere.

The store and log classes are imported on first use (``hookagent.lazy``): plugin discovery
imports this package in every process, and the fsspec ones pull in fsspec.
"""

from typing import TYPE_CHECKING

from hookagent.lazy import lazy_exports

from .config import STATE_HOME_ENV, default_root, open_store, state_home

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "LocalJsonFileStore": ".local",
        "FsspecJsonFileStore": ".remote",
        "FsspecJsonFileSessionLog": ".sessionlog",
        "JsonFileSessionLog": ".sessionlog",
        "open_session_log": ".sessionlog",
    },
)
