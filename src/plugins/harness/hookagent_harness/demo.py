"""``hookagent harness-demo``: the harness preset in a short scripted story, offline.

One step each: a todo list kept across two processes, a permission question answered, plan
mode blocking then releasing a write, MEMORY.md reaching the model, compaction of a long
conversation (the summary shown), an interrupt and a resume in another process; then where
everything is stored. The model is the rule-based demo model (``model="demo"``): the
sentences below are the ones its rules map to the harness tools (``harness_rules.py``).
Imported only when the CLI runs (it uses ``hookagent_cli``'s options and printer).
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import anyio
from hookagent import AgentConfig, Approve, RuntimeContext, Workspace
from hookagent.errors import AgentError
from hookagent.events import RunEvent
from hookagent_cli.options import build_config, describe_store, slot
from hookagent_cli.printer import EventPrinter, ToolResultTap

from .preset import describe

TODO = "Make a todo list: read the notes; write the summary; check the result"
TODO_ASK = "What is on my todo list?"
WRITE = 'Write "hello from the harness demo" to notes/hello.md'
WRITE_2 = 'Write "version 2, as planned" to notes/hello.md'
PLAN = "Plan: rewrite notes/hello.md as version 2, then read it back"
REMEMBER = "Remember: the demo user likes short answers"
RECALL = "What do you remember?"
SLOW = "Count to 20, slowly."
STOP = "stop, please"
RECAP = "What have we done so far?"
INDENT = "          "


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interrupt-after",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how long the slow tool runs before the demo interrupts it (default 1.0)",
    )


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _say(text: str = "") -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.preset not in (None, "harness"):
        raise AgentError(f"the harness demo runs the 'harness' preset, not {args.preset!r}")
    args.preset = "harness"
    if args.session is None:
        args.session = f"harness-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    if args.user is None:
        args.user = "demo"
    if args.demo_tools is False:
        raise AgentError("the demo needs the demo tools: drop --no-demo-tools")
    args.demo_tools = True
    tap = ToolResultTap()
    config = build_config(args, plugins=[tap])
    return anyio.run(Story(args, config, tap).tell)


class Story:
    """The demo's steps, in one process, with the second process started where it says."""

    def __init__(self, args: argparse.Namespace, config: AgentConfig, tap: ToolResultTap):
        self.args, self.config, self.tap = args, config, tap
        self.user, self.session = slot(args)
        self.agent: Any = None

    def workspace(self) -> Workspace:
        found = self.config.kernel.workspace(self.ctx())
        if found is None:
            raise AgentError("the harness demo needs hookagent-workspace (no workspace found)")
        return found

    def ctx(self, session: str | None = None) -> RuntimeContext:
        return RuntimeContext(user_id=self.user, session_id=session or self.session)

    async def tell(self) -> int:
        try:
            store = await self.config.kernel.store()
            where = describe_store(self.config, store)
            workspace = self.workspace()
            _say("hookagent harness demo: the harness preset, step by step (offline)")
            _say(f"  model      {self.args.model!r} (rule-based and offline: not an LLM)")
            _say(f"  state      {where}")
            _say(f"  workspace  {workspace.url}")
            _say(f"  slot       user {self.user!r}, session {self.session!r}")
            _say("  the preset's defaults (hookagent_harness.harness_config):")
            for line in describe():
                _say(_cut("    " + line, 110))
            async with self.config.build() as agent:
                self.agent = agent
                await self.todos()
                await self.permission()
                await self.plan_mode()
                await self.memory()
                await self.compaction()
                await self.interrupt()
            self.resume()
            await self.where(where, workspace)
            return 0
        finally:
            await self.config.aclose()

    # ---- one call, printed as it happens
    async def call(
        self,
        text: str | None,
        *,
        session: str | None = None,
        answers: list[Any] | None = None,
        approve: bool = True,
        on_event: Callable[[RunEvent], None] | None = None,
        quiet: bool = False,
    ) -> Any:
        if text is not None and not quiet:
            _say(f"   you>   {text}")
        out = io.StringIO() if quiet else sys.stdout
        printer = EventPrinter(out, self.tap, prompt="   agent> ", indent=INDENT)
        ctx = self.ctx(session)
        run = self.agent.prepare_call(text, ctx, answers=answers or ()).start()
        async for event in run.events():
            printer.event(event, ctx.agent_state)
            if on_event is not None:
                on_event(event)
        reply = await run.result()
        pending = reply.metadata.get("pending") or []
        if reply.metadata.get("generate_reason") == "SUSPENDED" and pending:
            if not approve:
                return reply
            for p in pending:
                if not quiet:
                    _say(f"{INDENT}? permissions ask before {p.get('tool')}: approved")
            return await self.call(
                None,
                session=session,
                answers=[Approve(p["tool_use_id"]) for p in pending],
                on_event=on_event,
                quiet=quiet,
            )
        printer.reply(reply.id, reply.text)
        return reply

    # ---- the steps
    async def todos(self) -> None:
        _say("\n1. A todo list, kept across two processes")
        await self.call(TODO)
        got = self.other_process(TODO_ASK)
        if "read the notes" not in got["reply"]:
            raise AgentError("the other process's model did not see the todo list")

    async def permission(self) -> None:
        _say("\n2. A permission question (default mode asks before a tool that writes)")
        reply = await self.call(WRITE, approve=False)
        [question] = reply.metadata["pending"]
        _say(f"   (the turn is suspended and saved) question: {question['prompt']}")
        _say(f"   you>   approve   ← agent.call(answers=[Approve({question['tool_use_id']!r})])")
        await self.call(None, answers=[Approve(question["tool_use_id"])])
        text = await self.workspace().read_text("notes/hello.md")
        _say(f"   ✓ notes/hello.md now holds: {text.strip()!r}")

    async def plan_mode(self) -> None:
        _say("\n3. Plan mode blocks a write, then releases it")
        await self.call("Enter plan mode")
        await self.call(WRITE_2)
        await self.call(PLAN)
        await self.call("Exit plan mode")
        await self.call(WRITE_2)
        text = await self.workspace().read_text("notes/hello.md")
        _say(
            f"   ✓ blocked without asking while planning; after plan_exit it ran: {text.strip()!r}"
        )

    async def memory(self) -> None:
        _say("\n4. MEMORY.md reaches the model (a new session of the same user)")
        await self.call(REMEMBER)
        fresh = f"{self.session}-memory"
        _say(f"   (session {fresh!r}: no history at all)")
        reply = await self.call(RECALL, session=fresh)
        if "likes short answers" not in reply.text:
            raise AgentError("MEMORY.md did not reach the model")

    async def compaction(self) -> None:
        _say("\n5. Compaction of a long conversation (the preset compacts at 50 messages)")
        finished: list[dict[str, Any]] = []

        def watch(event: RunEvent) -> None:
            if event.kind == "compaction_finished":
                finished.append(dict(event.data))

        n = 0
        while not finished and n < 40:
            n += 1
            await self.call(f"Note {n}: nothing to do, just talking.", on_event=watch, quiet=True)
        _say(f"   you>   Note 1 … Note {n} (short messages; their replies are not shown)")
        done = finished[0]
        if not done.get("accepted"):
            raise AgentError(f"the compaction was refused: {done.get('reason')}")
        _say(
            f"   ✓ compacted before the request: {done['before_messages']} messages → "
            f"{done['after_messages']} ({done['summarised']} summarised into one message, "
            f"{done['summary_tokens']} tokens; the last 20 kept verbatim)"
        )
        state = await self.agent.get_agent_state(self.user, self.session)
        _say("   the summary (state.summary, written by the demo model's summariser):")
        for line in (state.summary or "").splitlines()[:12]:
            _say(_cut(f"     | {line}", 104))

    async def interrupt(self) -> None:
        _say("\n6. An interrupt while a tool runs")
        after = self.args.interrupt_after

        def watch(event: RunEvent) -> None:
            if event.kind == "tool_called" and event.data.get("tool") == "slow_count":
                tg.start_soon(stop_later)

        async def stop_later() -> None:
            await anyio.sleep(after)
            _say(f"   (the tool is still running after {after:g}s)")
            _say(f"   you>   {STOP}   ← agent.interrupt(user, session, {STOP!r})")
            self.agent.interrupt(self.user, self.session, STOP)

        suspended = await self.call(SLOW, approve=False)
        answers = [Approve(p["tool_use_id"]) for p in suspended.metadata["pending"]]
        _say(f"{INDENT}? permissions ask before slow_count: approved")
        async with anyio.create_task_group() as tg:
            reply = await self.call(None, answers=answers, on_event=watch)
        if reply.metadata.get("generate_reason") != "INTERRUPTED":
            raise AgentError("the slow tool finished before the demo could interrupt it")

    def resume(self) -> None:
        log = self.log_url()
        if log is not None:
            _say("\n7. The session log, and a new process resuming from it")
            self.show_log(log)
        else:
            _say("\n7. A new process resumes the session (from the state store)")
        got = self.other_process(RECAP)
        if "interrupted" not in got["reply"]:
            raise AgentError("the resuming process did not see the interrupted request")

    def log_url(self) -> str | None:
        log = self.config.session_log
        return log if isinstance(log, str) else None

    def show_log(self, log: str) -> None:
        """The interrupted run's last facts, read by another process (``hookagent log tail``)."""
        filters = ["--type", "tool/", "--type", "run/finished"]
        cmd = [sys.executable, "-m", "hookagent_cli.main", "log", "tail", "-n", "3", *filters]
        cmd += ["--log", log, "--user", self.user, "--session", self.session]
        _say(
            f"   $ hookagent log tail -n 3 {' '.join(filters)} --log {log} --session {self.session}"
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise AgentError(f"hookagent log tail failed with exit code {proc.returncode}")
        for line in proc.stdout.splitlines():
            _say(_cut(f"     {line}", 110))
        _say("   ✓ the dispatch was durable before the tool ran; the run ended 'interrupted'")

    async def where(self, store: str, workspace: Workspace) -> None:
        files = sorted(await workspace.list(""))
        user, session = self.user, self.session
        extra = "" if self.args.agent_id == "hookagent" else f" --agent-id {self.args.agent_id}"
        if self.args.store:
            extra += f" --store {shlex.quote(self.args.store)}"
        if getattr(self.args, "session_log", None):
            extra += f" --session-log {shlex.quote(self.args.session_log)}"
        _say("\nWhere everything is stored")
        _say(f"  state (history, summary, todos, permissions, plan mode): {store}")
        log = self.log_url()
        _say(f"  workspace files: {workspace.url}")
        _say(f"    {', '.join(files)}")
        if log is not None:
            _say(f"  hookagent log show --log {shlex.quote(log)} --user {user} --session {session}")
        _say(f"  hookagent sessions show --preset harness --user {user} --session {session}{extra}")
        _say(f"  hookagent tasks show --preset harness --user {user} --session {session}{extra}")
        _say(f"  hookagent chat --preset harness --user {user} --session {session}{extra}")

    # ---- the other process
    def other_process(self, text: str) -> dict[str, Any]:
        args = self.args
        cmd = [sys.executable, "-m", "hookagent_cli.main", "run", "--preset", "harness"]
        cmd += ["--user", self.user, "--session", self.session, "--agent-id", args.agent_id]
        cmd += ["--model", args.model, "--demo-tools"]
        if args.store:
            cmd += ["--store", args.store]
        if getattr(args, "session_log", None):
            cmd += ["--session-log", args.session_log]
        for option in args.model_option:
            cmd += ["--model-option", option]
        _say(f"   $ hookagent run --preset harness --session {self.session} {shlex.quote(text)}")
        started = time.monotonic()
        proc = subprocess.run([*cmd, "--json", text], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise AgentError(f"the other process failed with exit code {proc.returncode}")
        result: dict[str, Any] = json.loads(proc.stdout)
        _say(
            textwrap.fill(
                result["reply"], 100, initial_indent="   agent> ", subsequent_indent=INDENT
            )
        )
        _say(
            f"   ✓ another process (took {time.monotonic() - started:.1f}s) loaded the session "
            f"from the {'session log' if self.log_url() else 'store'}: now {result['messages']} "
            f"messages, version {result['version']}"
        )
        return result
