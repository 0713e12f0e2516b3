"""The OpenAI-compatible chat-completions provider: ``generate``, ``stream`` and ``aclose``.

``stream`` is always offered; with the ``stream=False`` option it delegates to ``generate``
(one whole completion per answer), so the kernel's event stream keeps its shape.

The official ``openai`` client does the HTTP (base URL, auth, timeouts, SSE decoding) with its
own retries turned off: this module retries on 408/429/5xx, connection errors and timeouts with
exponential backoff and jitter, honouring ``Retry-After``, so the policy is one place and
tested. A stream is retried only while nothing of it has been shown to the caller.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import openai
from hookagent.errors import MalformedModelResponse, ModelUnavailable
from hookagent.messages import ThinkingBlock
from hookagent.models import ModelDelta, ModelRequest, ModelResponse

from .config import OpenAISettings
from .convert import build_body
from .failures import Failure, backoff_delay, classify
from .parse import parse_completion
from .streaming import StreamAccumulator

if TYPE_CHECKING:
    from hookagent.context import RuntimeContext

log = logging.getLogger("hookagent_model_openai")
T = TypeVar("T")


def decode_whole(content: bytes, http_request: Any) -> ModelResponse:
    """A whole JSON answer; an ``{"error": ...}`` body sent with 200 is raised as the error."""
    try:
        data = json.loads(content)
    except ValueError as exc:
        raise MalformedModelResponse(
            f"the server answered invalid JSON ({exc}): {content[:200]!r}"
        ) from None
    if isinstance(data, dict) and "error" in data and "choices" not in data:
        raise openai.APIError("error in a 200 answer", http_request, body=data["error"])
    return parse_completion(data)


def whole_delta(response: ModelResponse) -> ModelDelta | None:
    """The one delta a non-streamed answer makes, so stream subscribers still see the text."""
    thinking = "".join(b.thinking for b in response.message.content if isinstance(b, ThinkingBlock))
    text = response.message.text
    return ModelDelta(text=text, thinking=thinking) if (text or thinking) else None


class OpenAIChatModel:
    """A hookagent model backed by ``POST {base_url}/chat/completions``."""

    def __init__(self, settings: OpenAISettings, *, rng: random.Random | None = None) -> None:
        self.settings = settings
        self.name = f"openai:{settings.model}"
        self.attempts = 0
        """HTTP requests sent so far (retries included): for logs and tests."""
        self._rng = rng or random.Random()
        self._closed = False
        self._client = openai.AsyncOpenAI(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
            organization=settings.organization,
            project=settings.project,
            default_headers=settings.default_headers or None,
        )

    @classmethod
    def from_options(cls, **options: Any) -> OpenAIChatModel:
        return cls(OpenAISettings.from_options(**options))

    def __repr__(self) -> str:
        return (
            f"OpenAIChatModel(model={self.settings.model!r}, base_url={self.settings.base_url!r})"
        )

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        return self._closed

    async def aclose(self) -> None:
        """Close the HTTP client; later calls raise ``ModelUnavailable``."""
        if not self._closed:
            self._closed = True
            await self._client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise ModelUnavailable(f"{self.name}: the provider was closed (aclose)")

    # ------------------------------------------------------------------ retries

    def _give_up(self, failure: Failure, retry: int) -> bool:
        """Whether to raise now; logs the retry otherwise."""
        if not failure.retryable or retry >= self.settings.max_retries:
            return True
        if failure.retry_after is not None and failure.retry_after > self.settings.max_retry_after:
            return True
        return False

    def _delay(self, failure: Failure, retry: int) -> float:
        if failure.retry_after is not None:
            return failure.retry_after
        s = self.settings
        return backoff_delay(retry, base=s.backoff_base, cap=s.backoff_max, rng=self._rng)

    def _final_error(self, failure: Failure, tries: int, *, midstream: bool = False) -> Exception:
        """The error to raise, saying which provider and why the retries stopped."""
        err = failure.error
        note = ""
        if midstream and failure.retryable:
            note = " (mid-stream, after output was shown: not retried)"
        elif failure.retryable:
            wait = failure.retry_after
            if wait is not None and wait > self.settings.max_retry_after:
                note = (
                    f" (the server asked to wait {wait:.1f}s, longer than "
                    f"max_retry_after={self.settings.max_retry_after:g}s)"
                )
            else:
                note = f" (after {tries} attempt{'s' if tries != 1 else ''})"
        return type(err)(f"{self.name}: {err}{note}")

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        retry = 0
        while True:
            self._check_open()
            self.attempts += 1
            try:
                return await attempt()
            except Exception as exc:
                failure = classify(exc)
                if self._give_up(failure, retry):
                    raise self._final_error(failure, retry + 1) from exc
                delay = self._delay(failure, retry)
            log.warning("%s: %s; retry %d in %.2fs", self.name, failure.error, retry + 1, delay)
            await anyio.sleep(delay)
            retry += 1

    # ------------------------------------------------------------------ generate

    async def _create(self, body: dict[str, Any]) -> Any:
        """Send ``body`` as is: every field but model/messages/stream goes in ``extra_body``,
        so server-specific options (``top_k``, ``keep_alive``, ...) pass through untouched."""
        rest = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}
        named: dict[str, Any] = {"model": body["model"], "messages": body["messages"]}
        if body.get("stream"):
            named["stream"] = True
        return await self._client.chat.completions.with_raw_response.create(
            **named, extra_body=rest or None
        )

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        s = self.settings
        return build_body(
            request, model=s.model, defaults=s.params, stream=stream, stream_usage=s.stream_usage
        )

    async def generate(
        self, request: ModelRequest, ctx: RuntimeContext | None = None
    ) -> ModelResponse:
        """One whole answer (no streaming)."""
        self._check_open()
        body = self._body(request, stream=False)

        async def attempt() -> ModelResponse:
            raw = await self._create(body)
            return decode_whole(raw.content, raw.http_request)

        return await self._retrying(attempt)

    # ------------------------------------------------------------------ stream

    async def stream(
        self, request: ModelRequest, ctx: RuntimeContext | None = None
    ) -> AsyncIterator[ModelDelta | ModelResponse]:
        """Deltas as they arrive, then exactly one ``ModelResponse``.

        With ``stream=False`` the request is not streamed: ``generate`` answers and its text is
        yielded as one delta, as for a server that ignores ``"stream": true``.
        """
        self._check_open()
        if not self.settings.stream:
            response = await self.generate(request, ctx)
            delta = whole_delta(response)
            if delta is not None:
                yield delta
            yield response
            return
        body = self._body(request, stream=True)
        retry = 0
        while True:
            self._check_open()
            self.attempts += 1
            shown = False
            acc = StreamAccumulator()
            try:
                raw = await self._create(body)
                if raw.headers.get("content-type", "").split(";")[0].strip().endswith("json"):
                    # a server that ignored "stream": true and sent the whole answer
                    response = decode_whole(await raw.http_response.aread(), raw.http_request)
                    delta = whole_delta(response)
                    if delta is not None:
                        shown = True
                        yield delta
                else:
                    events = raw.parse(to=openai.AsyncStream[object])
                    async with events:
                        async for chunk in events:
                            delta = acc.add(chunk)
                            if delta is not None:
                                shown = True
                                yield delta
                    response = acc.finish()
            except Exception as exc:
                failure = classify(exc)
                if shown or self._give_up(failure, retry):
                    raise self._final_error(failure, retry + 1, midstream=shown) from exc
                delay = self._delay(failure, retry)
            else:
                yield response
                return
            log.warning("%s: %s; retry %d in %.2fs", self.name, failure.error, retry + 1, delay)
            await anyio.sleep(delay)
            retry += 1
