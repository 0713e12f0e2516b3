"""hookagent model provider for OpenAI-compatible chat-completions servers.

``AgentConfig(model="openai", ...)`` once installed, or build one directly::

    model = OpenAIChatModel.from_options(model="llama3.2", base_url="http://127.0.0.1:11434/v1")
"""

from typing import TYPE_CHECKING, Any

from .config import ModelConfigurationError, OpenAISettings

if TYPE_CHECKING:
    from .provider import OpenAIChatModel

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # the openai client costs ~2 s of CPU to import: only when a model is actually made
    if name == "OpenAIChatModel":
        from .provider import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(name)


__all__ = ["ModelConfigurationError", "OpenAIChatModel", "OpenAISettings", "__version__"]
