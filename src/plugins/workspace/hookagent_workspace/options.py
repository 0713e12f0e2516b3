"""``plugin_options["workspace"]``: where the workspace lives, its scope and its limits.

    {"url": "/srv/ws" | "file:///srv/ws" | "memory://ws" | "s3://bucket/ws",
     "scope": "user",                  # shared | user | session
     "storage_options": {...},         # passed to fsspec (remote credentials, ...)
     "shared": None,                   # override: does another host see this filesystem?
     "max_file_bytes": 1048576, "max_results": 500, "max_scan_files": 5000,
     "max_scan_bytes": 33554432, "max_output_chars": 40000, "max_search_seconds": 10}

With no ``url``, the workspace is a local directory ``$HOOKAGENT_WORKSPACE_HOME/<agent id>``
(default ``~/.hookagent/workspaces/<agent id>``, the agent id encoded as the stores encode
ids). Every option is checked when the configuration is prepared.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import attrs

from .backend import Backend
from .errors import WorkspaceOptionsError
from .local import LocalBackend
from .scope import SCOPES, Scope, id_names
from .workspace import Limits

HOME_ENV = "HOOKAGENT_WORKSPACE_HOME"
_LIMITS = tuple(a.name for a in attrs.fields(Limits))
KNOWN = ("url", "scope", "storage_options", "shared", *_LIMITS)
DEFAULT_SCOPE: Scope = "user"


def workspace_home() -> Path:
    env = os.environ.get(HOME_ENV)
    home = Path(env).expanduser() if env else Path.home() / ".hookagent" / "workspaces"
    return home.absolute()


@attrs.frozen
class WorkspaceSettings:
    """The parsed options of one configuration."""

    backend: Backend
    scope: Scope
    limits: Limits

    @property
    def shared(self) -> bool:
        return self.backend.shared


def redact(url: str) -> str:
    """A URL for messages: without a password, a query or a fragment."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    rest = rest.split("#", 1)[0].split("?", 1)[0]
    netloc, sep, path = rest.partition("/")
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    return f"{scheme}://{netloc}{sep}{path}"


def _local_path(url: str) -> Path:
    if "://" not in url:
        return Path(url).expanduser().absolute()
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise WorkspaceOptionsError(f"url {url!r}: file URLs name an absolute local path")
    return Path(unquote(parts.path))


def open_backend(
    url: str, storage_options: Mapping[str, Any] | None = None, shared: bool | None = None
) -> Backend:
    """The backend a URL (or a plain local path) names."""
    opts = dict(storage_options or {})
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("", "file", "local") and "::" not in url:
        if opts:
            raise WorkspaceOptionsError("storage_options apply to fsspec URLs, not local paths")
        return LocalBackend(_local_path(url), shared=bool(shared))
    # fsspec only for a URL that needs it: plugin discovery imports this module in every process
    import fsspec  # type: ignore[import-untyped]
    from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

    from .remote import FsspecBackend, protocols

    try:
        fs, path = fsspec.core.url_to_fs(url, **opts)
    except (ImportError, ValueError, TypeError) as exc:
        raise WorkspaceOptionsError(f"url {url!r}: fsspec cannot open it: {exc}") from None
    inner = fs
    while inner is not None:
        if isinstance(inner, LocalFileSystem):
            if inner is fs and "::" not in url:
                return LocalBackend(path, shared=bool(shared))
            raise WorkspaceOptionsError(
                f"url {url!r} wraps local disk in another fsspec layer; give the local path "
                "itself (the local backend refuses symbolic links, a wrapper would follow them)"
            )
        inner = getattr(inner, "fs", None)
    process_local = "memory" in protocols(fs)
    return FsspecBackend(
        fs, path, url=redact(url), shared=(not process_local) if shared is None else shared
    )


def _int(name: str, value: object) -> int:
    if type(value) is not int or value < 1:
        raise WorkspaceOptionsError(f"{name} must be an int >= 1, got {value!r}")
    return value


def parse_options(options: object, agent_id: str) -> WorkspaceSettings:
    """Settings from ``plugin_options["workspace"]`` (a mapping; {} for the defaults)."""
    if not isinstance(options, Mapping):
        raise WorkspaceOptionsError(
            f'plugin_options["workspace"] must be a mapping, got {type(options).__name__}'
        )
    unknown = sorted(set(options) - set(KNOWN))
    if unknown:
        raise WorkspaceOptionsError(
            f'plugin_options["workspace"]: unknown option(s) {unknown}; known: {sorted(KNOWN)}'
        )
    scope = options.get("scope", DEFAULT_SCOPE)
    if scope not in SCOPES:
        raise WorkspaceOptionsError(f"scope must be one of {list(SCOPES)}, got {scope!r}")
    shared = options.get("shared")
    if shared is not None and type(shared) is not bool:
        raise WorkspaceOptionsError(f"shared must be a bool or None, got {shared!r}")
    storage = options.get("storage_options") or {}
    if not isinstance(storage, Mapping):
        raise WorkspaceOptionsError(f"storage_options must be a mapping, got {storage!r}")
    url = options.get("url")
    if url is None:
        url = str(workspace_home().joinpath(*id_names(agent_id)))
    elif isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise WorkspaceOptionsError(f"url must be a non-empty str or path, got {url!r}")
    given = {k: options[k] for k in _LIMITS if k in options}
    for k, v in given.items():
        if k != "max_search_seconds":
            _int(k, v)
    try:
        limits = Limits(**given)
    except ValueError as exc:
        raise WorkspaceOptionsError(str(exc)) from None
    return WorkspaceSettings(open_backend(url, storage, shared), scope, limits)
