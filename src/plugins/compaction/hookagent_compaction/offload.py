"""Offloading (tool middleware, order 900): a large tool result goes to the workspace.

A result whose text is over ``offload_chars`` is written to
``large_tool_results/<agent>/<tool_use_id>-<sha256>`` (ids encoded like the stores' keys,
the name content-addressed); the history keeps a head and a tail of
``offload_preview_chars`` each, a marker line naming the file, and a ``DataBlock`` pointing
at it. The first offload activates the plugin's tool group for the session, so the model is
offered ``read_offloaded`` from the next request on. Excluded tools (and ``read_offloaded``
itself) are never offloaded; with no workspace installed nothing is offloaded and a warning
says so, once per configuration.
"""

from __future__ import annotations

import hashlib
import logging
import re
import warnings
from typing import Any

import attrs
from hookagent import Agent, AgentError, Workspace
from hookagent.context import RuntimeContext
from hookagent.messages import DataBlock, TextBlock, ToolResultBlock
from hookagent.relay import Middleware
from hookagent.store.ids import encode_id
from hookagent.tools import ToolCall

from .errors import OffloadError
from .options import NAME, READ_OFFLOADED
from .runtime import Runtime, runtime_for

TOOL_ORDER = 900
ROOT = "large_tool_results"
MARKER = "[offloaded tool result]"
MEDIA_TYPE = "text/plain; charset=utf-8"
_NAME = re.compile(r"^[a-z0-9_~-]+-[0-9a-f]{64}$")
log = logging.getLogger("hookagent.compaction")


class OffloadSkippedWarning(UserWarning):
    """A result over ``offload_chars`` stayed in the history: no workspace is installed."""


def offload_path(agent_id: str, tool_use_id: str, digest: str) -> str:
    return f"{ROOT}/{encode_id(agent_id)}/{encode_id(tool_use_id)}-{digest}"


def preview(text: str, path: str, chars: int, digest: str) -> str:
    """Head, marker, tail: what the history keeps of an offloaded result."""
    cut = len(text) - 2 * chars
    return (
        f"{text[:chars]}\n\n{MARKER} {cut} of {len(text)} characters are not shown here. "
        f"The full result is in the workspace at {path} (sha256 {digest}); read it with "
        f"{READ_OFFLOADED}(path={path!r}, offset=..., limit=...).\n\n"
        f"{text[len(text) - chars :] if chars else ''}"
    )


async def offload_middleware(call: ToolCall, ctx: RuntimeContext, call_next: Any) -> Any:
    out = await call_next(call)
    if not isinstance(out, ToolResultBlock):
        return out
    rt = runtime_for(ctx)
    if (
        rt is None
        or rt.options.offload_chars is None
        or call.use.name in rt.options.offload_exclude
    ):
        return out
    text = out.text
    if len(text) <= rt.options.offload_chars:
        return out
    workspace = rt.kernel.workspace(ctx)
    if workspace is None:
        _warn_once(rt, call.use.name, len(text))
        return out
    return await _offload(rt, ctx, workspace, out, text)


def _warn_once(rt: Runtime, tool_name: str, size: int) -> None:
    if rt.offload_warned:
        return
    rt.offload_warned = True
    warnings.warn(
        OffloadSkippedWarning(
            f"compaction: a {size}-character result of tool {tool_name!r} is over "
            f"offload_chars ({rt.options.offload_chars}) but no workspace plugin is installed: "
            "large results stay in the history (this warning is shown once)"
        ),
        stacklevel=2,
    )


async def _offload(
    rt: Runtime, ctx: RuntimeContext, workspace: Workspace, out: ToolResultBlock, text: str
) -> ToolResultBlock:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = offload_path(rt.kernel.config.id, out.id, digest)
    try:
        if not await workspace.exists(path):
            await workspace.write_text(path, text)
    except AgentError as exc:  # a full or refusing workspace: keep the result, say why
        log.warning("compaction: could not offload %s to %s: %s", out.name, path, exc)
        return out
    _activate_reader(ctx)
    chars = rt.options.offload_preview_chars
    others = tuple(b for b in out.output if not isinstance(b, TextBlock))
    url = f"{workspace.url.rstrip('/')}/{path}"
    blocks = (
        TextBlock(preview(text, path, chars, digest)),
        *others,
        DataBlock(url, MEDIA_TYPE, name=path),
    )
    return attrs.evolve(out, output=blocks)


def _activate_reader(ctx: RuntimeContext) -> None:
    state = ctx.agent_state
    if state is not None and NAME not in state.tool_context.activated_groups:
        state.tool_context.activated_groups.append(NAME)


# --------------------------------------------------------------------------- read_offloaded


def _check_path(path: str, agent_id: str) -> None:
    folder = f"{ROOT}/{encode_id(agent_id)}/"
    name = path[len(folder) :] if path.startswith(folder) else ""
    if not _NAME.match(name):
        raise OffloadError(
            f"{path!r} is not an offloaded result of this agent (expected {folder}<id>-<sha256>)"
        )


async def read_offloaded(path: str, ctx: RuntimeContext, offset: int = 0, limit: int = 0) -> str:
    """Read part of a large tool result that was offloaded to the workspace.

    Give the path from the result's marker; read from character ``offset``, at most
    ``limit`` characters (0: the largest page allowed). The answer says where the next page
    starts.
    """
    agent = ctx.get(Agent)
    rt = runtime_for(ctx)
    if agent is None or rt is None:
        raise OffloadError("read_offloaded runs only inside an agent call")
    _check_path(path, agent.config.id)
    page = rt.options.read_page_chars
    if offset < 0 or limit < 0:
        raise OffloadError("offset and limit must be >= 0")
    limit = page if limit == 0 else min(limit, page)
    workspace = rt.kernel.workspace(ctx)
    if workspace is None:
        raise OffloadError("no workspace is installed: there is nothing offloaded to read")
    text = await workspace.read_text(path)
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != path.rsplit("-", 1)[1]:
        raise OffloadError(f"{path} does not hold what was offloaded (its sha256 differs)")
    end = min(offset + limit, len(text))
    after = f"next offset {end}" if end < len(text) else "end of the result"
    return f"[{path}: characters {min(offset, len(text))}-{end} of {len(text)}; {after}]\n{text[offset:end]}"


TOOL_MIDDLEWARE = Middleware(offload_middleware, order=TOOL_ORDER)
