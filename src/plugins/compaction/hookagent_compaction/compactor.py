"""One compaction: cut, summarise, validate; and the run-scoped plan it leaves behind.

Nothing here writes the durable history. An accepted compaction becomes a ``Pending`` plan
on the run: later requests of the run are projected through it, and the run's save commits
it (``commit``: the history is replaced, so the store rewrites it as for ``clear_context``;
``state.summary`` is set). A refused one, a failed summariser or an interrupt leave the
history exactly as it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

import attrs
from hookagent import SUMMARY, emit_event
from hookagent.context import RuntimeContext
from hookagent.errors import Interrupted
from hookagent.messages import Msg
from hookagent.models import ModelRequest, ModelResponse
from hookagent.state import AgentState

from .cut import Cut, plan_cut
from .runtime import Runtime
from .summary import instructions, render_transcript, summary_message
from .validate import CompactionProposal, check_summary, run_validators

log = logging.getLogger("hookagent.compaction")
Summarise = Callable[[ModelRequest], Awaitable[ModelResponse]]


@attrs.frozen(eq=False)
class Pending:
    """An accepted compaction of ``state``, waiting for the run's save.

    ``dropped`` holds the summarised durable messages (matched by identity: two messages may
    share an id) and earlier summary messages; ``anchor`` is the first message of the kept
    tail, at ``upto`` in the durable history: the plan applies while it is still there (a
    failed run's partial output may have been removed).
    """

    state: AgentState
    summary: str
    message: Msg
    dropped: tuple[Msg, ...]
    upto: int
    anchor: Msg
    _ids: frozenset[int] = attrs.field(alias="ids")

    def applies(self) -> bool:
        history = self.state.context
        return self.upto < len(history) and history[self.upto] is self.anchor

    def drops(self, msg: Msg) -> bool:
        return id(msg) in self._ids

    def effective(self, history: Sequence[Msg]) -> list[Msg]:
        """The durable history as it will be once committed."""
        return [self.message, *(m for m in history if id(m) not in self._ids)]

    def project(self, messages: Sequence[Msg]) -> list[Msg]:
        """A request's messages with the summarised ones replaced by the summary message
        (where the first of them was); transient messages of other plugins stay."""
        out: list[Msg] = []
        placed = False
        for msg in messages:
            if id(msg) in self._ids:
                if not placed:
                    out.append(self.message)
                    placed = True
            else:
                out.append(msg)
        if not placed:
            out.insert(0, self.message)
        return out


@attrs.define(eq=False)
class RunCompaction:
    """The compaction state of one run (kept on its ``RuntimeContext``)."""

    state: AgentState
    pending: Pending | None = None
    refused: str | None = None

    def history(self) -> list[Msg]:
        """The effective durable history: the plan applied, if it still applies."""
        if self.pending is not None and self.pending.applies():
            return self.pending.effective(self.state.context)
        return list(self.state.context)

    def project(self, request: ModelRequest) -> ModelRequest:
        if self.pending is None or not self.pending.applies():
            return request
        return request.evolve(messages=self.pending.project(request.messages))


def run_compaction(ctx: RuntimeContext, state: AgentState) -> RunCompaction:
    """This run's compaction record (a derived context's record of another state is not it)."""
    run = ctx.get(RunCompaction)
    if run is None or run.state is not state:
        run = RunCompaction(state)
        ctx.put(RunCompaction, run)
    return run


def commit(ctx: RuntimeContext, state: AgentState) -> bool:
    """Write the run's accepted compaction into ``state`` (called as the run saves)."""
    run = ctx.get(RunCompaction)
    if run is None or run.state is not state:
        return False
    pending, run.pending = run.pending, None
    if pending is None or not pending.applies():
        return False
    state.context.replace(pending.effective(state.context))
    state.summary = pending.summary
    return True


def _protect_from(history: Sequence[Msg], state: AgentState) -> int | None:
    step = state.turn_context.step_id
    if step is None:
        return None
    for i in range(len(history) - 1, -1, -1):
        if history[i].id == step:
            return i
    return None


def _summary_request(rt: Runtime, summarised: Sequence[Msg], previous: str | None) -> ModelRequest:
    options = rt.options
    transcript = render_transcript(summarised, previous, options.summary_block_chars)
    return ModelRequest(
        messages=[Msg.user(transcript)],
        system=instructions(options.summary_max_tokens, options.summary_instructions),
        purpose=SUMMARY,
    )


async def compact(
    rt: Runtime,
    ctx: RuntimeContext,
    run: RunCompaction,
    summarise: Summarise,
    *,
    why: str,
    before_messages: int,
    before_tokens: int,
) -> Pending | None:
    """Try one compaction of the run's effective history; the accepted plan, or None (and
    ``run.refused`` says why). ``Interrupted`` and cancellation propagate untouched."""
    state = run.state
    history = run.history()
    cut = plan_cut(
        history,
        keep_messages=rt.options.keep_messages,
        keep_tokens=rt.options.keep_tokens,
        tokens_of=rt.tokens_of,
        protect_from=_protect_from(history, state),
    )
    await emit_event(
        ctx,
        "compaction_started",
        trigger=why,
        messages=before_messages,
        tokens=before_tokens,
        summarised=0 if cut is None else len(cut.summarised),
    )
    started = time.perf_counter()
    previous = run.pending.summary if run.pending is not None else state.summary
    text: str | None = None
    reason: str | None = None
    proposal: CompactionProposal | None = None
    if cut is None:
        reason = (
            f"nothing to summarise: the {len(history)} message(s) are all kept (keep limits, "
            "pinned messages, tool pairs, a suspended step)"
        )
    else:
        try:
            response = await summarise(
                _summary_request(rt, [history[i] for i in cut.summarised], previous)
            )
            text = response.message.text
        except Interrupted:
            raise
        except Exception as exc:  # any summariser failure refuses the compaction
            reason = f"the summariser failed: {type(exc).__name__}: {exc}"
    summary_tokens = 0
    if cut is not None and reason is None:
        summary_tokens = rt.count_text(text or "")
        reason = check_summary(text, summary_tokens, rt.options.summary_max_tokens)
        if reason is None:
            assert text is not None
            proposal = _proposal(rt, state, history, cut, text, previous, summary_tokens)
            reason = await run_validators(rt.validators(), proposal)
    elapsed = round((time.perf_counter() - started) * 1000, 3)
    if reason is not None or proposal is None or cut is None:
        run.refused = reason
        (log.info if cut is None else log.warning)(
            "compaction of session %r refused: %s", state.session_id, reason
        )
        await emit_event(
            ctx,
            "compaction_finished",
            accepted=False,
            reason=reason,
            before_messages=before_messages,
            before_tokens=before_tokens,
            elapsed_ms=elapsed,
        )
        return None
    pending = _pending(run, history, cut, proposal)
    run.pending, run.refused = pending, None
    after = rt.count(proposal.messages)
    await emit_event(
        ctx,
        "compaction_finished",
        accepted=True,
        before_messages=before_messages,
        before_tokens=before_tokens,
        after_messages=before_messages - len(history) + len(proposal.messages),
        after_tokens=before_tokens - rt.count(history) + after,
        summarised=len(proposal.summarised),
        summary_tokens=summary_tokens,
        elapsed_ms=elapsed,
    )
    return pending


def _proposal(
    rt: Runtime,
    state: AgentState,
    history: list[Msg],
    cut: Cut,
    text: str,
    previous: str | None,
    summary_tokens: int,
) -> CompactionProposal:
    summarised = tuple(history[i] for i in cut.summarised)
    message = summary_message(text, len(summarised))
    return CompactionProposal(
        history=tuple(history),
        messages=(message, *cut.kept(history)),
        summarised=summarised,
        summary=text.strip(),
        previous_summary=previous,
        summary_tokens=summary_tokens,
        budget_tokens=rt.options.summary_max_tokens,
        user_id=state.user_id,
        session_id=state.session_id,
    )


def _pending(
    run: RunCompaction, history: list[Msg], cut: Cut, proposal: CompactionProposal
) -> Pending:
    durable = run.state.context
    anchor = history[cut.index]  # the tail's first message is always a durable one
    upto = next(i for i in range(len(durable) - 1, -1, -1) if durable[i] is anchor)
    earlier = run.pending.dropped if run.pending is not None else ()
    dropped = (*earlier, *(history[i] for i in (*cut.summarised, *cut.summaries)))
    return Pending(
        state=run.state,
        summary=proposal.summary,
        message=proposal.messages[0],
        dropped=dropped,
        upto=upto,
        anchor=anchor,
        ids=frozenset(id(m) for m in dropped),
    )
