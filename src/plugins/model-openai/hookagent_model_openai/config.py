"""Provider settings: explicit options first, then environment variables, then defaults.

Resolved once when the provider is built, so a bad value fails at configuration time with a
``ModelConfigurationError`` naming the option, not on the first request.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
from hookagent.errors import ModelError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OFFICIAL_HOST = "api.openai.com"
PLACEHOLDER_API_KEY = "not-needed"
"""Sent when no key is configured: local servers (Ollama, llama.cpp, vLLM) ignore it."""

# request fields the provider owns; a pass-through option may not set them
RESERVED_PARAMS = frozenset({"messages", "tools", "stream", "stream_options", "n"})


class ModelConfigurationError(ModelError, ValueError):
    """A provider option or environment variable that cannot be used (names which and why)."""


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _number(name: str, value: Any, *, minimum: float, integer: bool = False) -> Any:
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        kind = "an integer" if integer else "a number"
        raise ModelConfigurationError(f"option {name}={value!r} must be {kind}") from None
    if isinstance(value, bool) or not math.isfinite(number) or number < minimum:
        raise ModelConfigurationError(f"option {name}={value!r} must be >= {minimum}")
    return number


def check_params(params: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Validate pass-through request parameters: str keys, JSON values, no reserved field."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            raise ModelConfigurationError(f"{where}: parameter names are non-empty strings")
        if key in RESERVED_PARAMS:
            raise ModelConfigurationError(
                f"{where}: {key!r} is set by the provider and cannot be passed as an option"
            )
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ModelConfigurationError(
                f"{where}: parameter {key!r} is not JSON-serializable ({exc})"
            ) from None
        out[key] = value
    return out


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def stream_setting(value: bool | None) -> bool:
    """The ``stream`` option (a bool), else ``HOOKAGENT_OPENAI_STREAM``, else True."""
    if value is None:
        raw = _env("HOOKAGENT_OPENAI_STREAM")
        if raw is None:
            return True
        if raw.lower() not in (*_TRUE, *_FALSE):
            raise ModelConfigurationError(
                f"HOOKAGENT_OPENAI_STREAM={raw!r} must be one of {', '.join(_TRUE + _FALSE)}"
            )
        return raw.lower() in _TRUE
    if not isinstance(value, bool):
        raise ModelConfigurationError(f"option stream={value!r} must be True or False")
    return value


@attrs.frozen
class OpenAISettings:
    """Everything the provider needs; build it with ``from_options``."""

    model: str
    base_url: str
    api_key: str
    timeout: float = 60.0
    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 60.0
    stream: bool = True
    """False: every answer is one whole (non-streamed) completion; see ``stream_setting``."""
    stream_usage: bool = True
    organization: str | None = None
    project: str | None = None
    default_headers: dict[str, str] = attrs.Factory(dict)
    params: dict[str, Any] = attrs.Factory(dict)
    """Default request parameters (temperature, max_tokens, ...); request options override."""

    @classmethod
    def from_options(
        cls,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_retry_after: float = 60.0,
        stream: bool | None = None,
        stream_usage: bool = True,
        organization: str | None = None,
        project: str | None = None,
        default_headers: Mapping[str, str] | None = None,
        **params: Any,
    ) -> OpenAISettings:
        model = model or _env("HOOKAGENT_OPENAI_MODEL", "OPENAI_MODEL")
        if not isinstance(model, str) or not model.strip():
            raise ModelConfigurationError(
                "no model name: pass model=... or set HOOKAGENT_OPENAI_MODEL or OPENAI_MODEL"
            )
        url = base_url or _env("HOOKAGENT_OPENAI_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        parts = urlsplit(str(url))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelConfigurationError(
                f"base_url={url!r} is not an http(s) URL (e.g. http://127.0.0.1:11434/v1)"
            )
        key = api_key or _env("HOOKAGENT_OPENAI_API_KEY", "OPENAI_API_KEY")
        if not key:
            if parts.hostname == OFFICIAL_HOST:
                raise ModelConfigurationError(
                    f"{url} needs an API key: pass api_key=... or set OPENAI_API_KEY"
                )
            key = PLACEHOLDER_API_KEY
        raw_timeout: Any = timeout if timeout is not None else _env("HOOKAGENT_OPENAI_TIMEOUT")
        raw_retries: Any = (
            max_retries if max_retries is not None else _env("HOOKAGENT_OPENAI_MAX_RETRIES")
        )
        headers = dict(default_headers or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            raise ModelConfigurationError("default_headers must map str to str")
        return cls(
            model=model.strip(),
            base_url=str(url).rstrip("/"),
            api_key=key,
            timeout=_number("timeout", 60.0 if raw_timeout is None else raw_timeout, minimum=0.001),
            max_retries=_number(
                "max_retries", 2 if raw_retries is None else raw_retries, minimum=0, integer=True
            ),
            backoff_base=_number("backoff_base", backoff_base, minimum=0),
            backoff_max=_number("backoff_max", backoff_max, minimum=0),
            max_retry_after=_number("max_retry_after", max_retry_after, minimum=0),
            stream=stream_setting(stream),
            stream_usage=bool(stream_usage),
            organization=organization or _env("OPENAI_ORG_ID"),
            project=project or _env("OPENAI_PROJECT_ID"),
            default_headers=headers,
            params=check_params(params, "provider options"),
        )
