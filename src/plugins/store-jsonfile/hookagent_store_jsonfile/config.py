"""URLs and paths to stores, and where the default store lives.

``file:///abs/path``, ``jsonfile:///abs/path``, ``jsonfile://relative/or/~/path`` and a plain
path give a ``LocalJsonFileStore``; ``memory://name`` and other fsspec URLs (``s3://``,
``gs://`` ...) give an ``FsspecJsonFileStore`` (single writer unless ``writers=multi``, which
needs conditional writes). Options come as keyword arguments
or in the query string (``?writers=single&sweep_after=600&cache_slots=256&seen_slots=8192``;
``sweep_after=none`` or ``inf``: never).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from hookagent.errors import StoreConfigurationError
from hookagent.store.ids import check_id

from .layout import id_parts

if TYPE_CHECKING:
    from .local import LocalJsonFileStore
    from .remote import FsspecJsonFileStore

STATE_HOME_ENV = "HOOKAGENT_STATE_HOME"
LOCAL_SCHEMES = ("file", "jsonfile")
FSSPEC_SCHEMES = ("memory", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")
LOG_SCHEMES = LOCAL_SCHEMES + tuple(s for s in FSSPEC_SCHEMES if s != "memory")
"""The session log's schemes: ``memory`` is the session-log plugin's (the in-memory one)."""


def _seconds(raw: str) -> float | None:
    """A query's ``sweep_after``: a number, ``inf`` or ``none`` (both: never)."""
    return None if raw.strip().lower() == "none" else float(raw)


_seconds.__name__ = "number of seconds (or none)"
_OPTIONS: dict[str, Any] = {
    "writers": str,
    "sweep_after": _seconds,
    "cache_slots": int,
    "seen_slots": int,
}


def state_home() -> Path:
    """``$HOOKAGENT_STATE_HOME`` if set, else ``~/.hookagent/state``; absolute, resolved now
    (a relative value names a directory under the current directory at this call, not at the
    store's first use)."""
    env = os.environ.get(STATE_HOME_ENV)
    home = Path(env).expanduser() if env else Path.home() / ".hookagent" / "state"
    return home.absolute()


def default_root(agent_id: str) -> Path:
    """``<state home>/<encoded agent_id>`` (long ids nested in chunks, as slot ids are)."""
    check_id(agent_id, "agent_id")
    return state_home().joinpath(*id_parts(agent_id))


def _query_options(query: str, url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, raw in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        kind = _OPTIONS.get(name)
        if kind is None:
            raise StoreConfigurationError(
                f"{url!r}: unknown option {name!r}; known: {sorted(_OPTIONS)}"
            )
        try:
            out[name] = kind(raw)
        except ValueError:
            raise StoreConfigurationError(
                f"{url!r}: option {name}={raw!r} is not a {kind.__name__}"
            ) from None
    return out


def local_path(url: str) -> Path:
    """The directory a local URL or plain path names."""
    if "://" not in url:
        return Path(url).expanduser().absolute()
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise StoreConfigurationError(
                f"{url!r}: file URLs name a local absolute path (file:///abs/path)"
            )
        path = unquote(parts.path)
        if not path.startswith("/"):
            raise StoreConfigurationError(f"{url!r}: file URLs need an absolute path")
        return Path(path)
    if parts.scheme == "jsonfile":
        rest = unquote(url.split("://", 1)[1].split("?", 1)[0])
        if not rest:
            raise StoreConfigurationError(f"{url!r}: no path given")
        return Path(rest).expanduser().absolute()
    raise StoreConfigurationError(f"{url!r}: not a local path URL")


def open_store(
    url: str | os.PathLike[str], **options: Any
) -> LocalJsonFileStore | FsspecJsonFileStore:
    """The store a URL or path names (keyword options win over the query string)."""
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise StoreConfigurationError(f"a store URL must be a non-empty str, got {url!r}")
    query = urlsplit(url).query if "://" in url else ""
    opts = {**_query_options(query, url), **options}
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    writers = opts.pop("writers", None)
    if writers not in (None, "single", "multi"):
        raise StoreConfigurationError(
            f"{url!r}: writers must be 'single' or 'multi', got {writers!r}"
        )
    if scheme in ("", *LOCAL_SCHEMES):
        unknown = set(opts) - {"sweep_after", "cache_slots", "seen_slots"}
        if unknown:
            raise StoreConfigurationError(f"{url!r}: unknown options {sorted(unknown)}")
        from .local import LocalJsonFileStore  # here: discovery imports this module

        return LocalJsonFileStore(local_path(url), writers=writers or "multi", **opts)
    unknown = set(opts) - {"cache_slots", "storage_options"}
    if unknown:
        raise StoreConfigurationError(f"{url!r}: unknown options {sorted(unknown)}")
    from .remote import FsspecJsonFileStore  # fsspec only for a URL that needs it

    base = url.split("?", 1)[0]
    return FsspecJsonFileStore(base, writers=writers or "single", **opts)
