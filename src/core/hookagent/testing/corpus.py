"""Identifier and payload corpora shared by the conformance suite and the store plugins' tests."""

from __future__ import annotations

import unicodedata

from ..store.ids import MAX_ID_LENGTH

HOSTILE_IDS: tuple[str, ...] = (
    ".",
    "..",
    "../x",
    "a/../../b",
    "/abs",
    "C:\\x",
    "\\\\server\\share",
    "a/b",
    "a\\b",
    "trailing.",
    "trailing ",
    " ",
    "CON",
    "NUL",
    "aux",
    "line\nbreak",
    "crlf\r\n",
    "esc\x1b[31m",
    unicodedata.normalize("NFC", "caf\u00e9"),
    unicodedata.normalize("NFD", "caf\u00e9"),
    "Alice",
    "alice",
    "\u202eevil",
    "\U0001f600emoji",
    ":",
    "{",
    "}",
    "{}",
    "}{",
    "{tag}",
    "*",
    "?",
    "[a-z]",
    "a_b",
    "a",
    "a*",
    "ab",
    "~",
    "~41",
    "%41",
    "' OR '1'='1",
    "x') OR 1=1--",
    '"; DROP TABLE s;--',
    "$.a",
    "a.b",
    "u1/sessions/s2",
    "x" * MAX_ID_LENGTH,
    "\u00e9" * MAX_ID_LENGTH,
)
"""Ids that are valid user data: each must be accepted, round-trip and never collide."""

INVALID_IDS: tuple[object, ...] = (
    "",
    "nul\x00inside",
    "x" * (MAX_ID_LENGTH + 1),
    "\ud800",
    None,
    42,
    b"bytes",
    ["list"],
)
"""Ids every store refuses with ``InvalidIdentifier`` (as session_id; "" is valid as user_id)."""

ENVELOPES: tuple[str, ...] = (
    '{"lc":1,"type":"constructor","id":["os","system"],"kwargs":{"command":"id"}}',
    '{"__class__":"os.system","args":["id"]}',
    '{"py/object":"subprocess.Popen","args":["id"]}',
    '{"$type":"System.Diagnostics.Process"}',
)
"""Shapes other frameworks revive as objects; here they must stay inert data or be refused."""
