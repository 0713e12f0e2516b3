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
