"""``hookagent demo``: the README's story in a few seconds, offline, with no configuration.

1. a call where the demo model calls a tool and answers with its result;
2. a second call interrupted in the middle of a slow tool, and the consistent state it saved;
3. a NEW PROCESS (``python -m hookagent_cli.main run``) resuming the same session;
4. where the state lives and how to inspect it.
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import subprocess
import sys
import textwrap
import time
from typing import Any

import anyio
from hookagent import AgentConfig, RuntimeContext
from hookagent.errors import AgentError

from .options import build_config, describe_store, slot
from .printer import EventPrinter, ToolResultTap
from .render import history_lines, pairing

FIRST = "What's the weather in Paris?"
SECOND = "Count to 20, slowly."
STOP = "stop, please"
THIRD = "What have we done so far?"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interrupt-after",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how long the slow tool runs before the demo interrupts it (default 1.0)",
    )


def run(args: argparse.Namespace) -> int:
    if args.session is None:
        args.session = f"demo-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    if args.user is None:
        args.user = "demo"
    user, session = slot(args)
    if args.demo_tools is False:
        raise AgentError("the demo needs the demo tools: drop --no-demo-tools")
    args.demo_tools = True
    tap = ToolResultTap()
    config = build_config(args, plugins=[tap])
    where = anyio.run(_in_process, args, config, tap, user, session)
    return _resume_elsewhere(args, user, session, where)


def _say(text: str = "") -> None:
    print(text, flush=True)


async def _in_process(
    args: argparse.Namespace, config: AgentConfig, tap: ToolResultTap, user: str, session: str
) -> str:
    out = sys.stdout
    try:
        store = await config.kernel.store()
        where = describe_store(config, store)
        tools = ", ".join(sorted(config.kernel.enabled_tools()[0]))
        _say("hookagent demo: an agent whose state survives interrupts and new processes")
        _say(
            f"  model  {args.model!r}"
            + (" (rule-based and offline: not an LLM)" if args.model == "demo" else "")
        )
        _say(f"  tools  {tools}")
        _say(f"  store  {where}")
        _say(f"  slot   user {user!r}, session {session!r}")
        async with config.build() as agent:
            _say(
                f"\n1. A call: the model calls a tool, then answers with its result\n   you>   {FIRST}"
            )
            printer = EventPrinter(out, tap, prompt="   agent> ", indent="          ")
            reply = await _watched(agent, FIRST, user, session, printer)
            printer.reply(reply.id, reply.text)

            _say(
                f"\n2. A second call, interrupted while its tool is still running\n   you>   {SECOND}"
            )
            printer = EventPrinter(out, tap, prompt="   agent> ", indent="          ")
            reply = await _interrupted(agent, args.interrupt_after, user, session, printer)
            printer.reply(reply.id, reply.text)

            state = await agent.get_agent_state(user, session)
            got = await store.get_versioned(user, session)
        calls, results, missing = pairing(state.context)
        interrupted = sum(
            1 for m in state.context for r in m.tool_results if r.state == "interrupted"
        )
        _say(
            f"\n3. What the store holds now (version {got.version}, {len(state.context)} messages)"
        )
        for line in history_lines(state.context, width=72):
            _say("  " + line)
        if missing:
            raise AgentError(f"the saved history has tool calls without a result: {missing}")
        _say(
            f"   ✓ consistent: {calls} tool calls, {results} results "
            f"({interrupted} marked 'interrupted'); nothing half-written"
        )
        return where
    finally:
        await config.aclose()


async def _watched(agent: Any, text: str, user: str, session: str, printer: EventPrinter) -> Any:
    ctx = RuntimeContext(user_id=user, session_id=session)
    run = agent.prepare_call(text, ctx).start()
    async for event in run.events():
        printer.event(event, ctx.agent_state)
    return await run.result()


async def _interrupted(
    agent: Any, after: float, user: str, session: str, printer: EventPrinter
) -> Any:
    ctx = RuntimeContext(user_id=user, session_id=session)
    run = agent.prepare_call(SECOND, ctx).start()
    async with anyio.create_task_group() as tg:
        async for event in run.events():
            printer.event(event, ctx.agent_state)
            if event.kind == "tool_called":

                async def stop_later() -> None:
                    await anyio.sleep(after)
                    printer.line(f"   (the tool is still running after {after:g}s)")
                    printer.line(f"   you>   {STOP}   ← agent.interrupt(user, session, {STOP!r})")
                    agent.interrupt(user, session, STOP)

                tg.start_soon(stop_later)
    reply = await run.result()
    if reply.metadata.get("generate_reason") != "INTERRUPTED":
        raise AgentError("the slow tool finished before the demo could interrupt it")
    return reply


def _resume_elsewhere(args: argparse.Namespace, user: str, session: str, where: str) -> int:
    cmd = [sys.executable, "-m", "hookagent_cli.main", "run", "--user", user, "--session", session]
    cmd += ["--agent-id", args.agent_id, "--model", args.model, "--demo-tools"]
    if args.store:
        cmd += ["--store", args.store]
    for option in args.model_option:
        cmd += ["--model-option", option]
    cmd += ["--json", THIRD]
    _say("\n4. A new process resumes the same session")
    _say(f"   $ hookagent run --user {user} --session {session} {shlex.quote(THIRD)}")
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise AgentError(f"the resuming process failed with exit code {proc.returncode}")
    import json

    result = json.loads(proc.stdout)
    _say(
        textwrap.fill(result["reply"], 100, initial_indent="   agent> ", subsequent_indent=" " * 10)
    )
    _say(
        f"   ✓ another process (took {time.monotonic() - started:.1f}s) loaded the saved "
        f"history and continued it: now {result['messages']} messages, version {result['version']}"
    )
    extra = "" if args.agent_id == "hookagent" else f" --agent-id {args.agent_id}"
    store = f" --store {shlex.quote(args.store)}" if args.store else ""
    _say(f"\nThe state lives in: {where}")
    _say(f"Inspect it:   hookagent sessions show --user {user} --session {session}{extra}{store}")
    _say(f"Continue it:  hookagent chat --user {user} --session {session}{extra}{store}")
    return 0
