"""A run that stops for ever at one recorder step, for the crash tests to SIGKILL there.

    python crash_process.py URL SESSION POINT LEASE

It prints ``COMMIT first last`` after every commit the log acknowledged and ``AT POINT``
when it reaches POINT (then sleeps): ``model`` (the provider is being called, its
dispatch is durable), ``before-dispatch`` (the tool is about to be dispatched),
``mid-tool`` (the tool runs), ``after-result`` (the tool returned; its result is not yet
durable: it goes with the next commit), ``next-model`` (the next model call, whose dispatch
commit carried the result), ``final-commit`` (the run's last commit is about to be written).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from hookagent import (
    AgentConfig,
    Middleware,
    ModelRequest,
    ModelResponse,
    Msg,
    RuntimeContext,
    hookimpl,
)
from hookagent.sessionlog import open_session_log
from hookagent.testing import tool_call
from hookagent_session_log import plugin

URL, SESSION, POINT, LEASE = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])


async def stop_here(point: str) -> None:
    if point == POINT:
        print(f"AT {point}", flush=True)
        await anyio.sleep(3600)


class Acknowledged:
    """The log, printing each commit it acknowledged (the test checks none is lost)."""

    def __init__(self, log: Any) -> None:
        self.log, self.locality = log, log.locality

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    async def commit(
        self, writer: Any, batch_id: str, expected: int, events: Any, *, finish: bool = False
    ) -> Any:
        if finish:
            await stop_here("final-commit")
        result = await self.log.commit(writer, batch_id, expected, events, finish=finish)
        print(f"COMMIT {result.first_seq} {result.last_seq}", flush=True)
        return result


class Model:
    async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            await stop_here("next-model")  # its dispatch carried the tool's result
            return ModelResponse(Msg.assistant("done"))
        await stop_here("model")
        return ModelResponse(tool_call("effect", amount=5))


async def effect(amount: int) -> str:
    """A side effect that must not happen twice."""
    await stop_here("mid-tool")
    return f"paid {amount}"


class Points:
    @hookimpl
    def hookagent_wrap_tool_call(self) -> Middleware:
        async def around(call: Any, ctx: Any, call_next: Any) -> Any:
            await stop_here("before-dispatch")
            out = await call_next(call)
            await stop_here("after-result")
            return out

        return Middleware(around, order=9000)  # just outside the recorder (10000)


async def main() -> None:
    log = Acknowledged(await open_session_log(URL))
    config = AgentConfig(
        model=Model(),
        tools=[effect],
        session_log=log,
        plugins=[plugin, Points()],
        autoload_plugins=False,
        plugin_options={"session-log": {"lease_seconds": LEASE}},
    )
    reply = await config.build().call("pay 5", RuntimeContext(user_id="crash", session_id=SESSION))
    print(f"REPLY {reply.text}", flush=True)


anyio.run(main)
