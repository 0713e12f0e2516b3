"""Slot ids built so that naive joins of (user, session) or (session, key) collide.

A store that keys a slot by ``user + sep + session`` (raw or ``encode_id`` forms, with any
separator a layout would use, or none) maps two of these pairs to one key; an injective
layout keeps them apart. Every pair is valid: the suite saves each and reads each back.
"""

from __future__ import annotations

SEPARATORS = ("", ":", "/", "\\", "|", "~", "_", "-", ".", " ", "#", "{", "}", ",", "+", "%", "=")
"""What naive layouts glue ids with (nothing at all included)."""


def colliding_pairs() -> list[tuple[str, str]]:
    """(user_id, session_id) pairs, grouped so that some naive join maps each group to one key."""
    pairs: list[tuple[str, str]] = []
    for sep in SEPARATORS:
        # raw join: "a" + sep + "b" + sep + "c" splits two ways
        pairs += [(f"a{sep}b", "c"), ("a", f"b{sep}c"), (f"a{sep}", "b"), ("a", f"{sep}b")]
    # joins of encode_id forms: "a~7e" + "~" + "1a" == "a" + "~" + "7e~1a" (= encode_id("7e\x1a"))
    pairs += [("a~", "1a"), ("a", "7e\x1a")]
    # concatenated encode_id forms: "~" (the anonymous user) + "7ex" == "~7e" ("~") + "x"
    pairs += [("", "7ex"), ("~", "x"), ("", "~"), ("~", "~")]
    return list(dict.fromkeys(pairs))


def colliding_session_keys() -> list[tuple[str, str]]:
    """(session_id, key) pairs that collide under a naive join of session and key."""
    out: list[tuple[str, str]] = []
    for sep in SEPARATORS:
        out += [(f"s{sep}k", "x"), ("s", f"k{sep}x")]
    return list(dict.fromkeys(out))
