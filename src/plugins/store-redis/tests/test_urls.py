"""The URL options a standalone store takes: every documented one is accepted, reaches the
connection with its type, and works against the local server (db 12, a fresh prefix)."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import AgentState, Msg
from hookagent.errors import StoreConfigurationError
from hookagent_store_redis import connect, urls
from hookagent_store_redis.testing import delete_prefix, new_prefix

pytestmark = pytest.mark.anyio
HOST = "redis://127.0.0.1:6379"

# docs/stores/redis.md lists exactly these (redis-py 8.1): keep the two in step
DOCUMENTED = {
    "db",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_read_size",
    "socket_keepalive",
    "retry_on_timeout",
    "retry_on_error",  # (redis-py 8.2 on)
    "max_connections",
    "health_check_interval",
    "protocol",
    "legacy_responses",
    "client_name",
    "username",
    "password",
}
DOCUMENTED_TLS = {
    "ssl_ca_certs",
    "ssl_ca_path",
    "ssl_ca_data",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_password",
    "ssl_cert_reqs",
    "ssl_ciphers",
    "ssl_check_hostname",
    "ssl_include_verify_flags",
    "ssl_exclude_verify_flags",
    "ssl_min_version",
}


def test_the_documented_url_options_are_exactly_the_accepted_ones() -> None:
    # "timeout" is a key redis-py's parser types but only its blocking pool takes: refused
    keys = urls._query_keys() - {"timeout"}
    newer = {"retry_on_error"} - keys  # documented, taken only by redis-py 8.2 and later
    assert keys == (DOCUMENTED | DOCUMENTED_TLS) - newer
    with pytest.raises(StoreConfigurationError, match="timeout"):
        connect(f"{HOST}/12?timeout=3")
    samples = {name: "x" for name in DOCUMENTED_TLS} | {
        "ssl_cert_reqs": "none",
        "ssl_check_hostname": "false",
        "ssl_min_version": "771",
        "ssl_include_verify_flags": "VERIFY_X509_STRICT",
        "ssl_exclude_verify_flags": "VERIFY_X509_STRICT",
    }
    for name, value in samples.items():
        with pytest.raises(StoreConfigurationError, match=name):  # refused, never ignored
            connect(f"{HOST}/12?{name}={value}")
        tls = connect(f"rediss://127.0.0.1:6380/0?{name}={value}").client.connection_pool
        assert name in tls.connection_kwargs


# (query, what reaches the connection keyword arguments, or the pool for max_connections)
END_TO_END: list[tuple[str, dict[str, Any]]] = [
    ("socket_timeout=3&socket_connect_timeout=1", {"socket_timeout": 3.0}),
    ("socket_read_size=65536", {"socket_read_size": 65536}),
    ("health_check_interval=30", {"health_check_interval": 30}),
    ("retry_on_timeout=true", {"retry_on_timeout": True}),
    ("max_connections=10", {}),
    ("client_name=hk-url-test", {"client_name": "hk-url-test"}),
    ("protocol=2", {"protocol": 2}),
    ("protocol=3", {"protocol": 3}),
    ("legacy_responses=false", {"legacy_responses": False}),
    ("socket_keepalive=true", {"socket_keepalive": True}),
    ("db=12", {"db": 12}),
    ("username=default&password=any%40thing", {"username": "default", "password": "any@thing"}),
    ("password=anything", {"password": "anything"}),
]


@pytest.mark.parametrize(
    ("url", "expected"),
    [(f"{HOST}/12?{query}", kwargs) for query, kwargs in END_TO_END]
    + [
        ("redis://default:any%40thing@127.0.0.1:6379/12", {"password": "any@thing"}),
        ("redis://default@127.0.0.1:6379/12", {"username": "default"}),
    ],
)
async def test_url_options_work_end_to_end(url: str, expected: dict[str, Any]) -> None:
    store = connect(url, prefix=new_prefix())
    try:
        kwargs = store.client.connection_pool.connection_kwargs
        assert {k: kwargs.get(k) for k in expected} == expected
        assert kwargs["db"] == 12
        if "max_connections" in url:
            assert store.client.connection_pool.max_connections == 10
        v = await store.save_if_version("u", "s", AgentState("s", "u", context=[Msg.user("hi")]), 0)
        got = await store.get_versioned("u", "s")
        assert got.version == v == 1 and got.state is not None
        assert [m.text for m in got.state.context] == ["hi"]
        if "client_name" in expected:
            assert await store.client.client_getname() in ("hk-url-test", b"hk-url-test")
        assert await store.client.execute_command("CLIENT", "INFO")  # the session is live
    finally:
        await delete_prefix(store.client, store.prefix)
        await store.aclose()


def test_tls_only_strings_reach_the_tls_connection() -> None:
    client = connect(
        "rediss://127.0.0.1:6380/0?ssl_password=key%26pass&ssl_ca_data=PEM&ssl_cert_reqs=none"
    ).client
    kwargs = client.connection_pool.connection_kwargs
    assert (kwargs["ssl_password"], kwargs["ssl_ca_data"]) == ("key&pass", "PEM")
    assert client.connection_pool.connection_class.__name__ == "SSLConnection"


@pytest.mark.parametrize(
    "url",
    [
        "redis://:pw@127.0.0.1:6379/12?password=other",
        "redis://me@127.0.0.1:6379/12?username=other",
        "redis://me:pw@127.0.0.1:6379/12?password=pw",
    ],
)
def test_credentials_given_twice_are_refused(url: str) -> None:
    """redis-py would take the netloc's and drop the query's without a word."""
    with pytest.raises(StoreConfigurationError, match="twice"):
        connect(url)
