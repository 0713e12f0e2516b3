"""What the plugin may record: user content and user_id are off unless the application opts in."""

from __future__ import annotations

import os

import attrs

from .errors import OtelConfigError

ENV_CONTENT = "HOOKAGENT_OTEL_RECORD_CONTENT"
ENV_USER_ID = "HOOKAGENT_OTEL_RECORD_USER_ID"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def _flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise OtelConfigError(f"{name}={raw!r}: use 1/true/yes/on or 0/false/no/off")


def _check_bool(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if type(value) is not bool:
        raise OtelConfigError(f"{attribute.name} must be a bool, got {value!r}")


def _check_limit(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if type(value) is not int or value < 1:
        raise OtelConfigError(f"{attribute.name} must be a positive int, got {value!r}")


@attrs.frozen
class OtelOptions:
    """``record_content``: prompts, completions, tool arguments and results go on spans
    (GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages``). ``record_user_id``: the
    run span carries ``user.id``. Both off by default. ``max_content_chars`` caps each
    recorded content attribute."""

    record_content: bool = attrs.field(default=False, validator=_check_bool)
    record_user_id: bool = attrs.field(default=False, validator=_check_bool)
    max_content_chars: int = attrs.field(default=16_384, validator=_check_limit)

    @classmethod
    def from_env(cls) -> OtelOptions:
        """The entry-point plugin's options: ``HOOKAGENT_OTEL_RECORD_CONTENT=1``,
        ``HOOKAGENT_OTEL_RECORD_USER_ID=1``."""
        return cls(record_content=_flag(ENV_CONTENT), record_user_id=_flag(ENV_USER_ID))
