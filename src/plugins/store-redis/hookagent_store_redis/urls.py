"""Store URLs for the three topologies, and the factory the plugin registers.

    redis://[[user]:password@]host[:port][/db][?prefix=..&ttl=..]   standalone
    rediss://...                                                     standalone over TLS
    redis+cluster://[[user]:password@]host:port[,host:port...]/      Cluster (seed nodes)
    redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]   Sentinel
    rediss+cluster://..., rediss+sentinel://...                      the same over TLS

Our own query options (removed before the rest goes to redis-py): ``prefix``, ``ttl``
(seconds), ``cache_slots``, ``replicas`` and ``replica_timeout`` (seconds); for sentinel also ``sentinel_password``. A standalone URL also
takes redis-py's typed URL options and the plain strings in ``_STRING_QUERY`` (credentials
too: ``?username=..&password=..``); Cluster and Sentinel URLs take no other option. Keyword options given
to the factory win over the query string. A Unix socket has no URL here: pass a client built
with ``unix_socket_path`` to ``RedisAgentStateStore``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from hookagent.errors import StoreConfigurationError

from . import conn
from .keys import DEFAULT_PREFIX, check_prefix
from .options import check_options, check_replication
from .schemes import SCHEMES as SCHEMES  # re-exported: its old home
from .store import RedisAgentStateStore

_STORE_OPTIONS = ("prefix", "ttl", "cache_slots", "replicas", "replica_timeout")
# query options redis-py's URL parser takes besides its typed ones (URL_QUERY_ARGUMENT_PARSERS):
# the connection's plain-string keywords, passed on unchanged (any other untyped key would reach
# the connection as a str: decode_responses=false would be true). Left out on purpose:
# encoding/encoding_errors (the store's bytes), lib_name/lib_version (ignored beside our
# driver_info); the ssl_* ones reach only a rediss:// connection (redis:// refuses them).
_STRING_QUERY = (
    "username",
    "password",
    "client_name",
    "ssl_ca_certs",
    "ssl_ca_path",
    "ssl_ca_data",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_password",
    "ssl_cert_reqs",
    "ssl_ciphers",
)
_CLIENT_DEFAULTS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0}
_PLUGIN_VERSION = "0.1.0"


def _driver_defaults() -> dict[str, Any]:
    """CLIENT SETINFO names redis-py and this plugin, with versions known at import.

    Left to itself, redis-py looks its own version up in the installed package metadata on
    the first connection (``importlib.metadata``: 2-3 ms inside the first call, which is a
    cold resume's budget).
    """
    import redis

    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # redis-py < 7: the older spelling
        return {"lib_version": redis.__version__}
    info = DriverInfo(lib_version=redis.__version__)
    return {"driver_info": info.add_upstream_driver("hookagent", _PLUGIN_VERSION)}


def _query_keys() -> set[str]:
    from redis.asyncio import connection

    return {*getattr(connection, "URL_QUERY_ARGUMENT_PARSERS", {"db": int}), *_STRING_QUERY}


def _accepted(cls: type) -> set[str] | None:
    """Keyword names a redis-py connection class takes, following ``**kwargs`` up its MRO.

    None when no class in the chain closes it (then nothing can be told from the signatures).
    """
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names - {"self"}
    return None


def _check_connection_options(pool: Any) -> None:
    """Refuse, at build time, options the connection class would reject on first connect.

    Why: redis-py hands URL query keys and client keyword arguments to the connection class
    only when it connects, so a typo would otherwise pass ``connect()`` and then fail every
    call with a bare TypeError.
    """
    db = pool.connection_kwargs.get("db", 0)
    if type(db) is not int or db < 0:
        raise StoreConfigurationError(f"the redis database must be an int >= 0, got {db!r}")
    accepted = _accepted(pool.connection_class)
    if accepted is None:
        return
    given = set(pool.connection_kwargs) - {"connection_pool"}  # set by the sentinel pool itself
    unknown = sorted(given - accepted)
    if unknown:
        raise StoreConfigurationError(
            f"unknown redis client option(s) {unknown}: not accepted by redis-py's "
            f"{pool.connection_class.__name__}"
        )


def _hosts(netloc: str, default_port: int) -> tuple[str | None, str | None, list[tuple[str, int]]]:
    user = password = None
    if "@" in netloc:
        auth, netloc = netloc.rsplit("@", 1)
        user, _, pw = auth.partition(":")
        user, password = (unquote(user) or None), (unquote(pw) or None)
    hosts: list[tuple[str, int]] = []
    for part in netloc.split(","):
        if not part:
            continue
        if part.startswith("["):  # [ipv6]:port
            host, _, rest = part[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port = part.partition(":")
        try:
            hosts.append((host, int(port) if port else default_port))
        except ValueError:
            raise StoreConfigurationError(f"bad port in redis URL host {part!r}") from None
    if not hosts:
        raise StoreConfigurationError("a redis cluster/sentinel URL needs at least one host:port")
    return user, password, hosts


def _split_options(query: str) -> tuple[dict[str, str], dict[str, str]]:
    ours: dict[str, str] = {}
    theirs: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        (ours if k in (*_STORE_OPTIONS, "sentinel_password") else theirs)[k] = v
    return ours, theirs


def _store_options(
    ours: dict[str, str], options: dict[str, Any], allowed: tuple[str, ...]
) -> dict[str, Any]:
    given = sorted({*ours, *options} - {*allowed, "client_options", "sentinel_password"})
    if given:
        raise StoreConfigurationError(
            f"unknown redis store option(s): {given} (this takes {[*allowed]})"
        )
    out: dict[str, Any] = {}
    if "prefix" in ours:
        out["prefix"] = ours["prefix"]
    if "ttl" in ours:  # "", "none" or "0" in a URL: no ttl
        raw = ours["ttl"]
        try:
            out["ttl"] = float(raw) if raw.lower() not in ("", "none", "0") else None
        except ValueError:
            raise StoreConfigurationError(
                f"ttl in the redis URL is not a number: {raw!r}"
            ) from None
    for name, kind in (("cache_slots", int), ("replicas", int), ("replica_timeout", float)):
        if name in ours:
            try:
                out[name] = kind(ours[name])
            except ValueError:
                raise StoreConfigurationError(
                    f"{name} in the redis URL is not {'an int' if kind is int else 'a number'}: "
                    f"{ours[name]!r}"
                ) from None
    out.update({k: v for k, v in options.items() if k in allowed})
    return out


def connect(url: str, **options: Any) -> RedisAgentStateStore:
    """Build a store (and its client, owned by the store) from a URL."""
    client, on_close, store_kw = open_client(url, options)
    return RedisAgentStateStore(client, owns_client=True, on_close=on_close, **store_kw)


def open_client(
    url: str, options: Mapping[str, Any], allowed: tuple[str, ...] = _STORE_OPTIONS
) -> tuple[Any, list[Callable[[], Awaitable[Any]]], dict[str, Any]]:
    """The client a URL names, what else closing it takes, and the checked store options.

    Shared by the state store and the session log (``allowed``: the options the caller
    takes; any other is a ``StoreConfigurationError``).
    """
    if not isinstance(url, str):
        raise StoreConfigurationError(f"redis store URL must be a str, got {type(url).__name__}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise StoreConfigurationError(
            f"not a redis store URL scheme: {scheme!r} (one of {', '.join(SCHEMES)}; for a "
            "Unix socket pass a client to RedisAgentStateStore)"
        )
    ours, theirs = _split_options(parts.query)
    if "sentinel_password" in ours and not scheme.endswith("+sentinel"):
        raise StoreConfigurationError("sentinel_password applies only to redis+sentinel URLs")
    store_kw = _store_options(ours, dict(options), allowed)
    # every store option is checked before a client exists
    check_prefix(store_kw.get("prefix", DEFAULT_PREFIX))
    check_options(store_kw.get("ttl"), store_kw.get("cache_slots", 0), 0)
    check_replication(store_kw.get("replicas", 0), store_kw.get("replica_timeout", 1.0))
    if store_kw.get("replicas") and scheme.endswith("+cluster"):
        raise StoreConfigurationError(
            "replicas (WAIT-acknowledged saves) is not supported on redis+cluster URLs"
        )
    extra = options.get("client_options")
    if extra is not None and not isinstance(extra, Mapping):
        raise StoreConfigurationError(
            f"client_options must be a mapping of redis-py keyword arguments, got {extra!r}"
        )
    client_kw = {**_CLIENT_DEFAULTS, **dict(extra or {})}
    for name in _CLIENT_DEFAULTS:  # the timeouts we set: redis-py checks them only on connect
        value = client_kw[name]
        if value is not None and not (
            isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
        ):
            raise StoreConfigurationError(
                f"client option {name} must be None or a number of seconds > 0, got {value!r}"
            )
    if not {"driver_info", "lib_name", "lib_version"} & client_kw.keys():
        client_kw.update(_driver_defaults())
    tls = scheme.startswith("rediss")
    try:
        if scheme.endswith("+cluster"):
            return _cluster(parts.netloc, parts.path, theirs, tls, client_kw), [], store_kw
        if scheme.endswith("+sentinel"):
            client, on_close = _sentinel(parts.netloc, parts.path, ours, theirs, tls, client_kw)
            return client, on_close, store_kw
        from redis.asyncio import Redis

        db_query = theirs.get("db", "0")
        if not re.fullmatch(r"(?:/[0-9]+)?/?", parts.path) or not re.fullmatch("[0-9]+", db_query):
            raise StoreConfigurationError(
                "the database of a redis URL is a number >= 0 (/<db> or ?db=<db>), got path "
                f"{parts.path!r}" + (f" and db={db_query!r}" if "db" in theirs else "")
            )
        unknown = sorted(set(theirs) - _query_keys())
        if unknown:
            raise StoreConfigurationError(
                f"unknown option(s) {unknown} in the redis URL: the store takes "
                f"{[*_STORE_OPTIONS]}, redis-py {sorted(_query_keys())}; "
                "pass anything else in client_options"
            )
        for name, in_netloc in (("username", parts.username), ("password", parts.password)):
            if in_netloc and name in theirs:  # redis-py would use the netloc's, silently
                raise StoreConfigurationError(
                    f"the redis URL gives the {name} twice (before the host and as ?{name}=)"
                )
        plain = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(theirs), ""))
        client = Redis.from_url(plain, **client_kw)
        _check_connection_options(client.connection_pool)
        conn.install(client.connection_pool)
    except StoreConfigurationError:
        raise
    except (ValueError, TypeError) as exc:
        raise StoreConfigurationError(f"bad redis URL {url!r}: {exc}") from exc
    return client, [], store_kw


def _cluster(
    netloc: str,
    path: str,
    query: dict[str, str],
    tls: bool,
    kw: dict[str, Any],
) -> Any:
    from redis.asyncio.cluster import ClusterNode, RedisCluster

    user, password, hosts = _hosts(netloc, 6379)
    if path not in ("", "/"):
        raise StoreConfigurationError(
            f"a redis+cluster URL has no database path (a cluster has only db 0), got {path!r}"
        )
    if query:
        raise StoreConfigurationError(f"unsupported redis+cluster URL options: {sorted(query)}")
    return RedisCluster(
        startup_nodes=[ClusterNode(h, p) for h, p in hosts],
        username=user,
        password=password,
        ssl=tls,
        **kw,
    )


def _sentinel(
    netloc: str,
    path: str,
    ours: dict[str, str],
    query: dict[str, str],
    tls: bool,
    kw: dict[str, Any],
) -> tuple[Any, list[Callable[[], Awaitable[Any]]]]:
    from redis.asyncio.sentinel import Sentinel

    user, password, hosts = _hosts(netloc, 26379)
    segments = [unquote(p) for p in path.split("/") if p]
    if not segments or len(segments) > 2:
        raise StoreConfigurationError(
            "redis+sentinel URL needs /<service name>[/<db>], e.g. "
            "redis+sentinel://h1:26379,h2:26379/mymaster/0"
        )
    if len(segments) == 2 and not re.fullmatch("[0-9]+", segments[1]):
        raise StoreConfigurationError(
            f"the database of a redis+sentinel URL is a number >= 0, got {segments[1]!r}"
        )
    db = int(segments[1]) if len(segments) == 2 else 0
    if query:
        raise StoreConfigurationError(f"unsupported redis+sentinel URL options: {sorted(query)}")
    sentinel_kw: dict[str, Any] = {
        "socket_timeout": kw.get("socket_timeout"),
        "socket_connect_timeout": kw.get("socket_connect_timeout"),
        "ssl": tls,
    }
    if tls:  # the sentinels speak TLS too: same CA, client certificate and checks
        sentinel_kw.update({k: v for k, v in kw.items() if k.startswith("ssl_")})
    if ours.get("sentinel_password"):
        sentinel_kw["password"] = ours["sentinel_password"]
    sentinel = Sentinel(hosts, sentinel_kwargs=sentinel_kw)  # type: ignore[no-untyped-call,unused-ignore]  # (typed from redis 8.2)
    client = sentinel.master_for(
        segments[0], db=db, username=user, password=password, ssl=tls, **kw
    )
    _check_connection_options(client.connection_pool)
    conn.install(client.connection_pool)

    async def close_sentinels() -> None:
        for s in sentinel.sentinels:
            await s.aclose()

    return client, [close_sentinels]


def factory(url: str, **options: Any) -> RedisAgentStateStore:
    """The factory registered for every scheme in ``SCHEMES``."""
    return connect(url, **options)
