"""Command rules: a pattern of words against the call's shell command.

Two readings, as for paths (``paths``): an **allow** rule matches only a plain command, read
as written: no shell syntax at all (``; & | ` $ < > ( ) { } \\`` or a newline, quoted or not),
nothing but printable characters, runs of spaces counted as one. A **deny** or **ask** rule
matches when its words appear anywhere in the command at a word boundary, in any of the
command's readings: as written, with ``${VAR}``/``$VAR`` and quotes and backslashes removed,
every word reduced to its basename (``/bin/rm``), and NFKC case-folded. So ``sudo rm -rf
/``, ``X=1 rm -rf /``, ``echo ok; rm -rf /``, ``r'm' -rf /`` and ``rm${IFS}-rf /`` all meet a
deny ``rm -rf``; a harmless ``echo rm -rf`` meets it too. This is a seatbelt, not a sandbox:
a shell can always spell a command in a way no pattern foresees, which is why allow rules
are strict and anything they do not match follows the mode.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

import attrs

from .paths import fold

COMMAND_ARGUMENTS = ("command", "cmd")
MAX_COMMAND = 100_000
_SHELL_SYNTAX = re.compile(r"[;&|`$<>(){}\\\n\r]")
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]")
_WORD_BREAK = re.compile(r"[\s;&|`$<>(){}]+")
_QUOTES = re.compile(r"[\"'\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class CommandPatternError(ValueError):
    """A command pattern that cannot be used (empty, control characters)."""


def _core(words: list[str]) -> str:
    """The pattern's words as a regex: ``*`` is any run of characters, ``\\*`` a star."""
    out = []
    for word in words:
        parts = re.split(r"(\\\*|\*)", word)
        out.append(
            "".join(".*" if p == "*" else re.escape("*" if p == "\\*" else p) for p in parts)
        )
    return re.escape(" ").join(out)


@attrs.frozen
class CommandPattern:
    """A compiled pattern. ``exact``: the whole command (a pattern with no ``*`` is a prefix
    ending at a word boundary; a trailing `` *`` or ``:*`` says the same); ``anywhere``: the
    words at any word boundary (deny and ask)."""

    text: str
    exact: re.Pattern[str]
    anywhere: re.Pattern[str]
    folded: re.Pattern[str]

    @classmethod
    def compile(cls, text: str) -> CommandPattern:
        if _CONTROL.search(text):
            raise CommandPatternError("a command pattern must not hold control characters")
        words = text.split()
        if words and words[-1].endswith(":*") and words[-1] != ":*":
            words[-1] = words[-1][:-2]
            words.append("*")
        if words and words[-1] == "*":
            words.pop()
            tail = True
        else:
            tail = not any("*" in w.replace("\\*", "") for w in words)
        if not words:
            raise CommandPatternError("a command pattern needs at least one word")
        core = _core(words)
        folded = _core(fold(" ".join(words)).split())
        return cls(
            text,
            re.compile(core + ("(?: .*)?" if tail else ""), re.DOTALL),
            re.compile(f"(?:^| ){core}(?= |$)", re.DOTALL),
            re.compile(f"(?:^| ){folded}(?= |$)", re.DOTALL),
        )

    def allows(self, command: str) -> bool:
        """The strict reading (allow rules)."""
        if _SHELL_SYNTAX.search(command) or not command.replace("\t", " ").isprintable():
            return False
        return bool(self.exact.fullmatch(" ".join(command.split())))

    def catches(self, command: str) -> bool:
        """The wide reading (deny and ask rules); one regex search per reading."""
        if len(command) > MAX_COMMAND:
            return True  # too long to read with confidence: caught
        plain = _VARIABLE.sub(" ", command)
        for variant in (plain, _QUOTES.sub("", plain)):
            words = [w for w in _WORD_BREAK.split(variant) if w]
            for form in (words, [posixpath.basename(w) or w for w in words]):
                subject = " ".join(form)
                if self.anywhere.search(subject) or self.folded.search(fold(subject)):
                    return True
        return False


def command_of(args: Mapping[str, Any]) -> str | None:
    """The call's command: the ``command`` (or ``cmd``) argument, a string or a list of
    strings (joined by spaces); None when there is none we can read."""
    for name in COMMAND_ARGUMENTS:
        if name not in args:
            continue
        value = args[name]
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
        return None
    return None
