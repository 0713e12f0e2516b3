"""What the plugin keeps per prepared configuration: options, limits, a token cache.

A configuration is prepared once (``hookagent_configure``); its ``Runtime`` is found again
from any call through ``ctx.get(Agent).kernel``. Token counts are cached per message (by its
id, timestamp, role and block count: a message reloaded from the store hits the cache too;
messages are frozen), so the per-call trigger check costs a dict lookup per message, not a
count of the whole history.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hookagent import Agent
from hookagent.context import RuntimeContext
from hookagent.messages import Msg

from .options import NAME, CompactionOptions

if TYPE_CHECKING:
    from hookagent.kernel import Kernel

CACHE_LIMIT = 32_768
"""Messages whose token count is cached (the cache starts over when full)."""
_Key = tuple[str, float, str, int]
_RUNTIMES: weakref.WeakKeyDictionary[Kernel, Runtime] = weakref.WeakKeyDictionary()


class Runtime:
    """One configuration's compaction settings and caches."""

    def __init__(self, kernel: Kernel, options: CompactionOptions) -> None:
        self._kernel = weakref.ref(kernel)  # the registry's key: never kept alive by it
        self.options = options
        self.window: int | None = kernel.context_window
        self.trigger_tokens = options.trigger_tokens_for(self.window)
        options.check_tokens(self.trigger_tokens)
        self._tokens: dict[_Key, int] = {}
        self._system: tuple[str | None, int] = (None, 0)
        self.offload_warned = False

    @property
    def kernel(self) -> Kernel:
        kernel = self._kernel()
        assert kernel is not None  # a runtime is reached only through its live kernel
        return kernel

    # ---- tokens
    def tokens_of(self, msg: Msg) -> int:
        """The message's token count by the configuration's counter (cached)."""
        key = (msg.id, msg.timestamp, msg.role, len(msg.content))
        count = self._tokens.get(key)
        if count is None:
            if len(self._tokens) >= CACHE_LIMIT:
                self._tokens.clear()
            count = self._tokens[key] = self.kernel.count_tokens([msg])
        return count

    def count(self, messages: Sequence[Msg], system: str | None = None) -> int:
        """The request's size: each message's count plus the system prompt's."""
        total = sum(self.tokens_of(m) for m in messages)
        if system:
            cached, n = self._system
            if cached != system:
                n = self.kernel.count_tokens([], system=system)
                self._system = (system, n)
            total += n
        return total

    def count_text(self, text: str) -> int:
        return self.kernel.count_tokens([Msg.assistant(text)])

    # ---- triggers
    def trigger(self, messages: int, tokens: int) -> str | None:
        """Why this request is compacted ("messages" or "tokens"), or None."""
        limit = self.options.trigger_messages
        if limit is not None and messages >= limit:
            return "messages"
        if tokens >= self.trigger_tokens:
            return "tokens"
        return None

    def fits(self, tokens: int) -> bool:
        """Whether a request of ``tokens`` fits the model's declared window (unknown: yes,
        the provider decides)."""
        return self.window is None or tokens <= self.window

    # ---- the summariser
    def summary_model(self) -> Any:
        return self.options.summary_model or self.kernel.model

    def validators(self) -> list[Any]:
        """Every ``hookagent_validate_compaction`` implementation, in pluggy's call order."""
        hook = getattr(self.kernel.pm.hook, "hookagent_validate_compaction", None)
        if hook is None:
            return []
        return [impl.function for impl in reversed(hook.get_hookimpls())]


def configure(kernel: Kernel, raw: Any) -> Runtime:
    runtime = Runtime(kernel, CompactionOptions.parse(raw))
    _RUNTIMES[kernel] = runtime
    return runtime


def runtime_for(ctx: RuntimeContext) -> Runtime | None:
    """The runtime of the configuration running this call (None outside a call)."""
    agent = ctx.get(Agent)
    if agent is None:
        return None
    kernel = agent.kernel
    runtime = _RUNTIMES.get(kernel)
    if runtime is None:  # configured before this plugin was registered: options now
        runtime = configure(kernel, kernel.config.plugin_options.get(NAME))
    return runtime
