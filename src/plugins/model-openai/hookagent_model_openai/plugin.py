"""The entry point: registers the ``openai`` model provider with hookagent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookagent.hookspecs import hookimpl
from hookagent.registry import ModelRegister

if TYPE_CHECKING:
    from .provider import OpenAIChatModel

MODEL_NAME = "openai"


def create_model(**options: Any) -> OpenAIChatModel:
    """``factory(**options)`` for ``AgentConfig(model="openai")``; see the README for options."""
    from .provider import OpenAIChatModel  # imported on use: loading the plugin stays cheap

    return OpenAIChatModel.from_options(**options)


@hookimpl
def hookagent_register_models(register: ModelRegister) -> None:
    register(MODEL_NAME, create_model)
