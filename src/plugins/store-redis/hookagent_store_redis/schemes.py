"""The URL schemes this distribution serves (standalone, Cluster, Sentinel; each over TLS).

Its own module, free of redis-py, because plugin discovery reads ``SCHEMES`` in every
process: redis-py is imported only when a store or a session log is opened.
"""

from __future__ import annotations

SCHEMES = (
    "redis",
    "rediss",
    "redis+cluster",
    "rediss+cluster",
    "redis+sentinel",
    "rediss+sentinel",
)
