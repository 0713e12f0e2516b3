"""Running calls from a synchronous terminal: the event loop lives in a portal thread.

The main thread keeps the terminal, so Ctrl-C (SIGINT, always delivered to the main thread)
arrives there as ``KeyboardInterrupt`` while it waits for the call: the first one interrupts
the running call through the kernel (a cooperative interrupt that saves a consistent state),
the second one cancels it and leaves.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import anyio
import anyio.from_thread
from hookagent import AgentConfig, AgentRun, Answer, RuntimeContext
from hookagent.messages import Msg

from .gates import CliSessionGate
from .printer import EventPrinter, ProgressLog, ToolResultTap


class Leave(Exception):
    """The user pressed Ctrl-C a second time: stop waiting and exit."""


class CallRunner:
    """One agent on one (user, session), driven from the main thread."""

    def __init__(
        self, config: AgentConfig, tap: ToolResultTap, user_id: str, session_id: str
    ) -> None:
        self.config, self.tap = config, tap
        self.user_id, self.session_id = user_id, session_id
        self.portal: anyio.from_thread.BlockingPortal | None = None
        self.agent: Any = None
        self.run: AgentRun | None = None
        self.last_run_id: str | None = None
        self.on_interrupt: Any = None
        self.progress = ProgressLog(sys.stderr)

    @contextlib.contextmanager
    def open(self) -> Iterator[CallRunner]:
        root = logging.getLogger()
        root.addHandler(self.progress)
        with contextlib.ExitStack() as stack:
            stack.callback(root.removeHandler, self.progress)
            with self._portal() as runner:
                yield runner

    @contextlib.contextmanager
    def _portal(self) -> Iterator[CallRunner]:
        with anyio.from_thread.start_blocking_portal() as portal:
            self.portal = portal
            try:
                with portal.wrap_async_context_manager(self.config.build()) as agent:
                    self.agent = agent
                    yield self
            finally:
                with contextlib.suppress(Exception):
                    portal.call(self.config.aclose)
                self.portal = None

    def state(self) -> tuple[Any, int]:
        assert self.portal is not None
        got: tuple[Any, int] = self.portal.call(self._state)
        return got

    async def _state(self) -> tuple[Any, int]:
        store = await self.config.kernel.store()
        got = await store.get_versioned(self.user_id, self.session_id)
        return got.state, got.version

    def call(
        self,
        text: str | None,
        printer: EventPrinter,
        interrupt_message: str | None = None,
        answers: Sequence[Answer] = (),
    ) -> Msg:
        """Run one call to its reply (``answers`` continue a suspended turn); Ctrl-C
        interrupts it, a second Ctrl-C raises ``Leave``."""
        assert self.portal is not None
        self.progress.printer = printer
        gate = self.config.session_gate
        if isinstance(gate, CliSessionGate):
            gate.notify = lambda text: printer.line(f"{printer.indent}· {text}")
        try:
            return self._wait(
                self.portal.start_task_soon(self._call, text, printer, tuple(answers)),
                interrupt_message,
            )
        finally:
            self.progress.printer = None

    def _wait(self, future: Any, interrupt_message: str | None) -> Msg:
        assert self.portal is not None
        interrupted = False
        while True:
            try:
                got: Msg = future.result(timeout=0.05)
                return got
            except TimeoutError:
                continue
            except KeyboardInterrupt:
                if interrupted:
                    future.cancel()
                    with contextlib.suppress(BaseException):
                        future.result(timeout=10)
                    raise Leave() from None
                interrupted = True
                if self.on_interrupt is not None:
                    self.on_interrupt()
                run = self.run
                if run is not None:
                    self.portal.call(run.interrupt, interrupt_message)

    async def _call(
        self, text: str | None, printer: EventPrinter, answers: tuple[Answer, ...] = ()
    ) -> Msg:
        ctx = RuntimeContext(user_id=self.user_id, session_id=self.session_id)
        run = self.agent.prepare_call(text, ctx, answers=answers)
        self.run = run
        self.last_run_id = run.run_id

        async def watch() -> None:
            async for event in run.events():
                printer.event(event, ctx.agent_state)

        error: BaseException | None = None
        reply: Msg | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                try:
                    reply = await run.result()
                except Exception as exc:
                    error = exc
        finally:
            self.run = None
        if error is not None:
            raise error
        assert reply is not None
        return reply


def write_err(text: str, err: TextIO) -> None:
    err.write(text + "\n")
    err.flush()
