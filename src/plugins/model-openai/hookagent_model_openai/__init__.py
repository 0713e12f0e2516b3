"""hookagent model provider for OpenAI-compatible chat-completions servers.

``AgentConfig(model="openai", ...)`` once installed, or build one directly::

    model = OpenAIChatModel.from_options(model="llama3.2", base_url="http://127.0.0.1:11434/v1")
"""

from .config import ModelConfigurationError, OpenAISettings
from .provider import OpenAIChatModel

__version__ = "0.1.0"
__all__ = ["ModelConfigurationError", "OpenAIChatModel", "OpenAISettings", "__version__"]
