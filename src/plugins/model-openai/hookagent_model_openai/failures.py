"""Turning client-library exceptions into hookagent's typed model errors, and the retry policy.

Every exception met while talking to the server goes through ``classify``: the caller gets a
``ModelError`` subclass (never a raw openai/httpx exception) and knows whether a retry may
help and how long the server asked to wait.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import time
from collections.abc import Mapping
from typing import Any

import attrs
import openai
from hookagent.errors import (
    ContextLengthExceeded,
    MalformedModelResponse,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelUnavailable,
)

RETRY_STATUSES = frozenset({408, 429})  # plus every 5xx
NO_RETRY_429_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
_CONTEXT_PATTERNS = re.compile(
    r"context_length_exceeded|maximum context length|context length|context window"
    r"|exceeds? the available context|exceed_context_size|too many tokens|prompt is too long",
    re.IGNORECASE,
)
_TRANSPORT_MODULES = ("httpx", "httpx2", "httpcore", "h11", "h2", "ssl", "socket")


@attrs.frozen
class Failure:
    """A classified failure: the error to raise, and whether retrying may help."""

    error: ModelError
    retryable: bool = False
    retry_after: float | None = None


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, ``retry-after`` (secs or date)."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when is None or when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return None


def backoff_delay(
    retry: int, *, base: float, cap: float, rng: random.Random | None = None
) -> float:
    """Exponential backoff with equal jitter: ``d/2 + U(0, d/2)``, ``d = min(cap, base*2**n)``."""
    delay = min(cap, base * (2.0 ** min(retry, 60)))
    return delay / 2 + (rng or random).uniform(0, delay / 2)


def server_detail(exc: openai.APIError) -> tuple[str, str, str]:
    """(message, code, type) from an error body, whatever its shape."""
    body: Any = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail") or exc.message
        code, kind = body.get("code"), body.get("type")
    else:
        message, code, kind = (body if isinstance(body, str) and body else exc.message), None, None
    return str(message)[:500], "" if code is None else str(code), "" if kind is None else str(kind)


def is_context_error(message: str, code: str, kind: str) -> bool:
    return bool(_CONTEXT_PATTERNS.search(" ".join((code, kind, message))))


def _status_failure(exc: openai.APIStatusError) -> Failure:
    status = exc.status_code
    message, code, kind = server_detail(exc)
    said = f"HTTP {status}: {message}" + (f" (code {code})" if code else "")
    headers = exc.response.headers if exc.response is not None else None
    if status in (401, 403):
        return Failure(ModelAuthError(f"the server refused the credentials: {said}"))
    if status == 429:  # an exhausted quota will not come back by waiting
        retry = code not in NO_RETRY_429_CODES
        return Failure(ModelRateLimited(f"rate limited: {said}"), retry, parse_retry_after(headers))
    if is_context_error(message, code, kind) and status < 500:
        return Failure(ContextLengthExceeded(f"the request does not fit the context: {said}"))
    if status >= 500 or status in RETRY_STATUSES:
        return Failure(ModelUnavailable(f"server error: {said}"), True, parse_retry_after(headers))
    return Failure(ModelError(f"the server rejected the request: {said}"))


def classify(exc: BaseException) -> Failure:
    """The typed error for ``exc`` (an exception raised by the client library or our parsing)."""
    if isinstance(exc, ModelError):
        return Failure(exc, retryable=isinstance(exc, ModelUnavailable))
    if isinstance(exc, openai.APIStatusError):
        return _status_failure(exc)
    if isinstance(exc, openai.APITimeoutError):
        return Failure(ModelUnavailable(f"the request timed out: {exc}"), True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause else "")
        return Failure(ModelUnavailable(f"cannot reach the server: {why}"), True)
    if isinstance(exc, openai.APIResponseValidationError):
        return Failure(MalformedModelResponse(f"invalid response: {exc}"))
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        message, code, kind = server_detail(exc)
        if is_context_error(message, code, kind):
            return Failure(
                ContextLengthExceeded(f"the request does not fit the context: {message}")
            )
        return Failure(ModelUnavailable(f"the server reported an error: {message}"), True)
    if isinstance(exc, ValueError):  # bad JSON in an SSE event
        return Failure(MalformedModelResponse(f"the server sent invalid JSON: {exc}"))
    if isinstance(exc, TimeoutError | ConnectionError) or type(exc).__module__.split(".")[0] in (
        _TRANSPORT_MODULES
    ):
        return Failure(ModelUnavailable(f"transport error: {type(exc).__name__}: {exc}"), True)
    if isinstance(exc, openai.OpenAIError):
        return Failure(ModelError(f"client error: {type(exc).__name__}: {exc}"))
    return Failure(ModelError(f"unexpected {type(exc).__name__} from the client: {exc}"))
