"""Helpers the session-log tests share: a configuration on a log, a slot's context."""

from __future__ import annotations

from typing import Any

from hookagent import AgentConfig, RuntimeContext
from hookagent_session_log import plugin


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"v{key}"


def make_config(log: Any, model: Any, **kw: Any) -> AgentConfig:
    kw.setdefault("tools", [lookup])
    plugins = [plugin, *kw.pop("plugins", ())]
    return AgentConfig(model=model, session_log=log, plugins=plugins, autoload_plugins=False, **kw)


def ctx(session: str = "s", user: str = "u", **kw: Any) -> RuntimeContext:
    return RuntimeContext(user_id=user, session_id=session, **kw)
