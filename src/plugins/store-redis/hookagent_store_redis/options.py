"""Checks of the Redis store's options, made before any client is built."""

from __future__ import annotations

import math

from hookagent.errors import StoreConfigurationError

MAX_TTL_MS = 2**53 - 1  # exact in Lua's doubles; far below Redis's own expiry limit


def check_options(ttl: object, cache_slots: object, seen_slots: object) -> int:
    """The numeric store options, checked when the store is built; returns the ttl in ms.

    Why here: a bad value must fail at configuration time with a typed error, not on the
    first call (a str ``cache_slots`` only broke the first cache put).
    """
    if ttl is not None and not (
        isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and math.isfinite(ttl)
    ):
        raise StoreConfigurationError(
            f"ttl must be a finite number of seconds > 0 or None, got {ttl!r}"
        )
    if ttl is not None and not (0 < ttl and ttl * 1000 <= MAX_TTL_MS):
        raise StoreConfigurationError(
            f"ttl must be > 0 and at most {MAX_TTL_MS // 1000} seconds, or None, got {ttl!r}"
        )
    for name, value in (("cache_slots", cache_slots), ("seen_slots", seen_slots)):
        if type(value) is not int or value < 0:
            raise StoreConfigurationError(f"{name} must be an int >= 0, got {value!r}")
    return 0 if ttl is None else max(1, int(ttl * 1000))


MAX_REPLICAS = 1_000
MAX_WAIT_MS = 2**31 - 1  # WAIT's timeout; 0 would mean "block forever", so it is refused


def check_replication(replicas: object, replica_timeout: object) -> int:
    """The replicated-acknowledgement options; returns the WAIT timeout in ms.

    ``replicas`` (int, 0 = off) is how many replicas must hold a save before it is
    acknowledged; ``replica_timeout`` (finite seconds > 0) how long a save waits for them.
    """
    if type(replicas) is not int or not 0 <= replicas <= MAX_REPLICAS:
        raise StoreConfigurationError(
            f"replicas must be an int from 0 (off) to {MAX_REPLICAS}, got {replicas!r}"
        )
    if not (
        isinstance(replica_timeout, (int, float))
        and not isinstance(replica_timeout, bool)
        and math.isfinite(replica_timeout)
        and 0 < replica_timeout
        and replica_timeout * 1000 <= MAX_WAIT_MS
    ):
        raise StoreConfigurationError(
            f"replica_timeout must be a number of seconds > 0 and at most {MAX_WAIT_MS // 1000},"
            f" got {replica_timeout!r}"
        )
    return max(1, int(replica_timeout * 1000))
