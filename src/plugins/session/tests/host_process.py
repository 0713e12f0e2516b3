"""A service replica for the multi-process tests: a SessionHost that also takes commands.

    python host_process.py SPEC_JSON

SPEC: {"log": URL, "inbox": URL, "inbox_options": {...}, "replica": ID, "user": USER,
"effects": PATH, "lease": SECONDS}. The host serves USER. Each model call appends
``REPLICA SESSION TEXT`` to the effects file (what must happen exactly once); input holding
``SLOW`` prints ``AT SLOW <session>`` and sleeps until the process is killed; ``TOOLCALL``
calls the tool ``effect``, which prints ``AT TOOL <session>`` and sleeps the same way. Standard
input takes ``SUBMIT SESSION KEY TEXT`` lines and answers ``OK COMMAND_ID`` (or ``ERR``).
``READY`` is printed once the host runs.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import orjson
from hookagent import AgentConfig, ModelRequest, ModelResponse, Msg
from hookagent.testing import tool_call
from hookagent_session import SessionHost

SPEC: dict[str, Any] = orjson.loads(sys.argv[1])


class EffectModel:
    name = "effects"

    async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
        text = [m.text for m in request.messages if m.role == "user"][-1]
        line = f"{SPEC['replica']} {ctx.session_id} {text}\n".encode()
        fd = os.open(SPEC["effects"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if "TOOLCALL" in text and request.messages[-1].role == "user":
            return ModelResponse(tool_call("effect", session=str(ctx.session_id)))
        if "SLOW" in text:
            print(f"AT SLOW {ctx.session_id}", flush=True)
            await anyio.sleep(3600)
        await anyio.sleep(0.01)
        return ModelResponse(Msg.assistant(f"done: {text}"))


async def effect(session: str) -> str:
    """A side effect that must not happen twice: it never ends (the test kills the process)."""
    print(f"AT TOOL {session}", flush=True)
    await anyio.sleep(3600)
    return "never"


async def main() -> None:
    lease = float(SPEC["lease"])
    config = AgentConfig(
        model=EffectModel(),
        tools=[effect],
        session_log=SPEC["log"],
        plugin_options={"session-log": {"lease_seconds": lease}},
    )
    host = SessionHost(
        config,
        inbox=SPEC["inbox"],
        inbox_options=SPEC.get("inbox_options") or {},
        replica_id=SPEC["replica"],
        users=[SPEC["user"]],
        poll_interval=0.1,
        owner_lease=lease,
    )
    async with host:
        print("READY", flush=True)
        stdin = anyio.wrap_file(sys.stdin)
        async for line in stdin:
            parts = line.rstrip("\n").split(" ", 3)
            if parts[0] != "SUBMIT" or len(parts) != 4:
                print("ERR bad line", flush=True)
                continue
            _, session_id, key, text = parts
            try:
                view = await host.session(SPEC["user"], session_id).submit(
                    text, idempotency_key=key
                )
            except Exception as exc:
                print(f"ERR {type(exc).__name__}: {exc}", flush=True)
            else:
                print(f"OK {view.command_id}", flush=True)


if __name__ == "__main__":
    anyio.run(main)
