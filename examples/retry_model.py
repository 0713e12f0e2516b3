"""A retry plugin on the around-the-model middleware (``hookagent_wrap_model_call``).

Copy it into your project, or register it as is::

    AgentConfig(model="openai", plugins=[RetryModelCalls(attempts=4)])

It retries only errors worth retrying (the provider unavailable or rate limited), with
exponential back-off and jitter, and lets everything else through: ``Interrupted`` and
cancellation pass untouched, so an interrupt during a back-off or a retried stream stops the
run at once. Streaming keeps working: each attempt streams through the same chain, and a
failed attempt's partial deltas are followed by a ``model_retry`` log line.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from hookagent import (
    Middleware,
    ModelError,
    ModelRateLimited,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    RuntimeContext,
    hookimpl,
)

log = logging.getLogger("hookagent.examples.retry")


class RetryModelCalls:
    """Retry ``retry_on`` errors up to ``attempts`` times in all, sleeping
    ``base_delay * 2**n`` (plus up to 10% jitter, capped at ``max_delay``) between tries."""

    def __init__(
        self,
        attempts: int = 3,
        *,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        retry_on: tuple[type[ModelError], ...] = (ModelUnavailable, ModelRateLimited),
        order: int = -100,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {attempts}")
        self.attempts, self.base_delay, self.max_delay = attempts, base_delay, max_delay
        self.retry_on, self.order = retry_on, order
        self.retries = 0  # how many retries this plugin made (for tests and metrics)

    async def middleware(
        self,
        request: ModelRequest,
        ctx: RuntimeContext,
        call_next: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        for attempt in range(self.attempts):
            try:
                return await call_next(request)
            except self.retry_on as exc:
                if attempt + 1 == self.attempts:
                    raise
                delay = min(self.max_delay, self.base_delay * 2**attempt)
                delay += random.uniform(0, delay / 10)
                self.retries += 1
                log.warning(
                    "model_retry run=%s attempt=%d/%d in %.2fs: %s",
                    ctx.run_id,
                    attempt + 2,
                    self.attempts,
                    delay,
                    exc,
                )
                await anyio.sleep(delay)  # an interrupt cancels this sleep
        raise AssertionError("unreachable")

    @hookimpl
    def hookagent_wrap_model_call(self) -> Any:
        return Middleware(self.middleware, order=self.order)
