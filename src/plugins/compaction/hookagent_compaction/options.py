"""The plugin's options, read from ``AgentConfig(plugin_options={"compaction": {...}})``.

Every option is checked when the configuration is prepared (``hookagent_configure``); a bad
one refuses the configuration with ``CompactionOptionsError`` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .errors import CompactionOptionsError

NAME = "compaction"
WINDOW_MARGIN = 20_000
"""``trigger_tokens`` defaults to the model's declared window minus this margin."""
UNKNOWN_WINDOW_TRIGGER = 160_000
"""``trigger_tokens`` when the model declares no window."""
READ_OFFLOADED = "read_offloaded"


def _positive(name: str, value: Any, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if type(value) is not int or value < 1:
        kind = "a positive int or None" if optional else "a positive int"
        raise CompactionOptionsError(f"compaction option {name} must be {kind}, got {value!r}")
    return value


@attrs.frozen
class CompactionOptions:
    """What triggers a compaction, what it keeps, how it summarises, what it offloads.

    ``trigger_tokens=None`` is derived from the model (see ``trigger_tokens_for``). A limit
    set to None is off (``trigger_messages=None``: only tokens trigger). Giving
    ``keep_tokens`` without ``keep_messages`` keeps by tokens only; giving both keeps the
    longest tail within both.
    """

    trigger_messages: int | None = 50
    trigger_tokens: int | None = None
    keep_messages: int | None = 20
    keep_tokens: int | None = None
    summary_model: Any = None
    summary_max_tokens: int = 4_000
    summary_block_chars: int = 2_000
    summary_instructions: str | None = None
    offload_chars: int | None = 80_000
    offload_preview_chars: int = 2_000
    offload_exclude: frozenset[str] = frozenset()
    read_page_chars: int = 20_000
    enabled: bool = True

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> CompactionOptions:
        """Checked options from the configuration's ``plugin_options["compaction"]``.

        None (the configuration does not name the plugin) is off: installing the plugin
        compacts and offloads only for configurations that ask (``{"compaction": {}}`` for
        the defaults), as installing a tool plugin hands its tools to no agent that did not.
        """
        if raw is None:
            return cls(enabled=False, offload_chars=None)
        if not isinstance(raw, Mapping):
            raise CompactionOptionsError(
                f"plugin_options['compaction'] must be a dict, got {type(raw).__name__}"
            )
        known = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise CompactionOptionsError(
                f"unknown compaction option(s) {', '.join(map(str, unknown))}; "
                f"known: {', '.join(sorted(known))}"
            )
        values = dict(raw)
        if "keep_tokens" in values and "keep_messages" not in values:
            values["keep_messages"] = None  # keep by tokens only
        for name in ("trigger_messages", "trigger_tokens", "keep_messages", "keep_tokens"):
            values[name] = _positive(name, values.get(name, getattr(_DEFAULT, name)))
        for name in ("summary_max_tokens", "summary_block_chars", "read_page_chars"):
            values[name] = _positive(
                name, values.get(name, getattr(_DEFAULT, name)), optional=False
            )
        values["offload_chars"] = _positive("offload_chars", values.get("offload_chars", 80_000))
        preview = values.get("offload_preview_chars", _DEFAULT.offload_preview_chars)
        if type(preview) is not int or preview < 0:
            raise CompactionOptionsError(
                f"compaction option offload_preview_chars must be an int >= 0, got {preview!r}"
            )
        values["offload_exclude"] = _names(values.get("offload_exclude", ()))
        if type(values.get("enabled", True)) is not bool:
            raise CompactionOptionsError(
                f"compaction option enabled must be True or False, got {values['enabled']!r}"
            )
        instructions = values.get("summary_instructions")
        if instructions is not None and (
            not isinstance(instructions, str) or not instructions.strip()
        ):
            raise CompactionOptionsError(
                "compaction option summary_instructions must be a non-empty str or None"
            )
        model = values.get("summary_model")
        if model is not None and not callable(getattr(model, "generate", None)):
            raise CompactionOptionsError(
                "compaction option summary_model must be a model object (with an async "
                f"generate(request, ctx)), got {type(model).__name__}"
            )
        options = cls(**values)
        options.check_limits()
        return options

    def check_limits(self) -> None:
        """Limits that contradict each other (a tail as long as the trigger never shrinks)."""
        if (
            self.keep_messages is not None
            and self.trigger_messages is not None
            and self.keep_messages >= self.trigger_messages
        ):
            raise CompactionOptionsError(
                f"compaction keep_messages ({self.keep_messages}) must be below "
                f"trigger_messages ({self.trigger_messages}): the kept tail would trigger again"
            )
        if self.keep_messages is None and self.keep_tokens is None:
            raise CompactionOptionsError(
                "compaction needs keep_messages or keep_tokens (both are None)"
            )
        if self.offload_chars is not None and 2 * self.offload_preview_chars >= self.offload_chars:
            raise CompactionOptionsError(
                f"compaction offload_preview_chars ({self.offload_preview_chars}) is too large: "
                f"head and tail together must be below offload_chars ({self.offload_chars})"
            )

    def trigger_tokens_for(self, context_window: int | None) -> int:
        """The token trigger: the option, else the model's window minus a margin."""
        if self.trigger_tokens is not None:
            return self.trigger_tokens
        if context_window is None:
            return UNKNOWN_WINDOW_TRIGGER
        return max(context_window - WINDOW_MARGIN, context_window // 2)

    def check_tokens(self, trigger_tokens: int) -> None:
        """Token limits against the effective token trigger (known once the model is bound)."""
        if self.keep_tokens is not None and self.keep_tokens >= trigger_tokens:
            raise CompactionOptionsError(
                f"compaction keep_tokens ({self.keep_tokens}) must be below the token "
                f"trigger ({trigger_tokens})"
            )
        if self.summary_max_tokens >= trigger_tokens:
            raise CompactionOptionsError(
                f"compaction summary_max_tokens ({self.summary_max_tokens}) must be below the "
                f"token trigger ({trigger_tokens})"
            )


def _names(value: Any) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise CompactionOptionsError(
            f"compaction option offload_exclude must be a list of tool names, got {value!r}"
        )
    bad = [v for v in value if not isinstance(v, str) or not v]
    if bad:
        raise CompactionOptionsError(f"compaction option offload_exclude holds non-names {bad!r}")
    return frozenset(value) | {READ_OFFLOADED}


_DEFAULT = CompactionOptions()
