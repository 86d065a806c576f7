"""The Compactor: a serial actor that fits conversations into their budget.

::

    spec = compactor_spec(
        "compactor", config=CompactConfig(context_window=32_000), summarizer=summarizer
    )
    compactor = await system.root.start_child(spec)
    result = await compactor.ask(cm.Compact(messages=history, scratch="time: 12:00"))

The protocol is :mod:`agcore_actors.context.messages`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import assert_never

import trio

from ..actor import DEFAULT_ISOLATION, Actor, ChildSpec, CircuitBreaker
from ..llm import Message, SystemMessage
from ._breaker import SummaryBreaker
from ._errors import ContextOverflow, InvalidCompactRequest, SummaryFailed, TokenizerUnavailable
from ._policy import CompactConfig
from ._steps import StepOutcome, keep_tool_results, microcompact
from ._summary import Summarizer, apply_summary, plan_summary, summarize
from ._tokens import (
    HeuristicEstimator,
    TokenEstimator,
    estimate_message_tokens,
    estimate_tokens,
)
from .messages import (
    Compact,
    CompactAfterOverflow,
    CompactorMsg,
    CompactorReply,
    CompactorStatus,
    CompactReport,
    CompactResult,
    GetCompactorStatus,
    StepName,
    StepReport,
)

#: A reactive compaction aims this far below the estimate that overflowed.
REACTIVE_SHRINK = 0.75
#: Without numbers from the provider, an overflow raises the calibration by this.
UNKNOWN_OVERFLOW_FACTOR = 1.25
MAX_CALIBRATION = 8.0


class Compactor(Actor[CompactorMsg]):
    """Serial actor that fits conversations into their token budget.

    Semantics:
        It holds the state compaction needs across turns: the summary failure
        breaker and the estimate's calibration (learnt from context-length
        errors). Steps, each only while the estimate is still at or over the
        budget: the keep-window (when configured), microcompact, the LLM summary
        (when a ``summarizer`` is given and the breaker allows it).
        ``estimator`` defaults to the heuristic; one that cannot count
        (:class:`TokenizerUnavailable`) falls back to it for that count.

    Cancellation:
        A cancelled ask cancels the summary call in flight; the breaker is then
        left as it was (a cancellation is not a failure of the summarizer).

    Errors:
        :class:`ContextOverflow` and :class:`InvalidCompactRequest` go to the
        asker. A failed summary is reported, not raised. ``breaker`` (made by
        :func:`compactor_spec` and shared by every incarnation) keeps an open
        breaker open across a restart.
    """

    expected_errors = (ContextOverflow, InvalidCompactRequest)

    def __init__(
        self,
        config: CompactConfig | None = None,
        *,
        summarizer: Summarizer | None = None,
        estimator: TokenEstimator | None = None,
        breaker: SummaryBreaker | None = None,
    ) -> None:
        self.config = config or CompactConfig()
        self.summarizer = summarizer
        self.estimator: TokenEstimator = estimator or HeuristicEstimator()
        self.breaker = breaker or SummaryBreaker(
            self.config.max_failures, self.config.breaker_cooldown
        )
        self.calibration = 1.0
        self.compactions = 0
        self.summaries = 0
        self._estimator_note = self.estimator.name
        self._per_message: Callable[[Message], int] | None = getattr(
            self.estimator, "count_message", None
        )
        #: The ask's counts, by message object (kept alive here, so ids stay unique).
        self._memo: dict[int, tuple[Message, int]] = {}

    async def handle(self, msg: CompactorMsg) -> CompactorReply:
        match msg:
            case Compact():
                return await self._on_compact(msg)
            case CompactAfterOverflow():
                return await self._on_compact_after_overflow(msg)
            case GetCompactorStatus():
                return self._on_get_status(msg)
            case _:
                assert_never(msg)

    async def _on_compact(self, msg: Compact) -> CompactResult:
        try:
            return await self._compact(msg.messages, msg.budget, msg.scratch, overflow=None)
        finally:
            self._memo.clear()

    async def _on_compact_after_overflow(self, msg: CompactAfterOverflow) -> CompactResult:
        overflow = (msg.actual, msg.limit)
        try:
            return await self._compact(msg.messages, msg.budget, msg.scratch, overflow=overflow)
        finally:
            self._memo.clear()

    def _on_get_status(self, msg: GetCompactorStatus) -> CompactorStatus:
        return CompactorStatus(
            consecutive_failures=self.breaker.consecutive_failures,
            breaker_open=self.breaker.is_open(),
            calibration=self.calibration,
            compactions=self.compactions,
            summaries=self.summaries,
        )

    def _estimate(self, message: Message) -> int:
        """One message's count, at most once per ask: the estimator's own when it
        counts message by message (the heuristic does), else the heuristic's
        (what the steps compare; the estimator then counts whole lists)."""
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        count = self._per_message or estimate_message_tokens
        n = count(message)
        self._memo[id(message)] = (message, n)
        return n

    async def _raw_count(self, messages: Sequence[Message]) -> int:
        """The estimator's count; the heuristic when the estimator cannot count."""
        if not messages:
            return 0
        if self._per_message is not None:
            return sum(map(self._estimate, messages))
        try:
            n = await self.estimator.count(messages)
            self._estimator_note = self.estimator.name
            return n
        except TokenizerUnavailable as exc:
            self._estimator_note = f"heuristic (fallback: {exc.reason})"
            return estimate_tokens(messages)

    async def _count(self, messages: Sequence[Message]) -> int:
        return math.ceil(await self._raw_count(messages) * self.calibration)

    def _recalibrate(self, raw: int, actual: int) -> None:
        if actual > 0 and raw > 0:
            factor = actual / raw
        else:
            factor = self.calibration * UNKNOWN_OVERFLOW_FACTOR
        # The calibration only grows: it corrects an under-estimate.
        self.calibration = min(MAX_CALIBRATION, max(self.calibration, factor))

    async def _compact(
        self,
        messages: list[Message],
        budget: int | None,
        scratch: str | None,
        overflow: tuple[int, int] | None,
    ) -> CompactResult:
        cfg = self.config
        if budget is not None and budget < 0:
            raise InvalidCompactRequest(f"budget must be >= 0, got {budget}")
        limit = cfg.threshold() if budget is None else budget
        if overflow is not None:
            actual, provider_limit = overflow
            self._recalibrate(await self._raw_count(messages), actual)
            if provider_limit > 0:
                # The provider's window holds the reply too: keep the configured
                # reserve and buffer free (but never aim below half the window).
                room = provider_limit - cfg.reserved() - cfg.buffer()
                limit = min(limit, max(room, provider_limit // 2))
        tail = [SystemMessage(scratch)] if scratch else []
        scratch_tokens = await self._count(tail)
        available = limit - scratch_tokens
        before = await self._count(messages)
        target = available
        if overflow is not None:
            target = min(available, math.floor(before * REACTIVE_SHRINK))

        def result(history: list[Message], tokens: int, steps: list[StepReport]) -> CompactResult:
            report = CompactReport(
                tokens_before=before + scratch_tokens,
                tokens_after=tokens + scratch_tokens,
                budget=limit,
                fits=tokens < available,
                steps=steps,
                estimator=self._estimator_note,
                scratch_tokens=scratch_tokens,
                reactive=overflow is not None,
                breaker_open=self.breaker.is_open(),
            )
            return CompactResult(messages=[*history, *tail], history=history, report=report)

        if before < target:
            return result(list(messages), before, [])
        if not cfg.auto_compress:
            raise ContextOverflow(before + scratch_tokens, limit)
        self.compactions += 1

        current = list(messages)
        tokens = before
        steps: list[StepReport] = []

        async def take(name: StepName, outcome: StepOutcome) -> None:
            nonlocal current, tokens
            if not outcome.changed:
                return
            after = await self._count(outcome.messages)
            if after >= tokens:
                # The heuristic said smaller, the configured estimator disagrees:
                # keep the messages as they were.
                return
            steps.append(
                StepReport(
                    name=name, tokens_before=tokens, tokens_after=after, changed=outcome.changed
                )
            )
            current, tokens = outcome.messages, after

        # Gentlest first: the keep-window keeps the last N tool results even
        # when they are older than the recent window, microcompact does not.
        if cfg.keep_tool_result >= 0:
            outcome = keep_tool_results(
                current,
                cfg.keep_tool_result,
                keep_recent=cfg.keep_recent,
                include_user=cfg.keep_tool_result_include_user,
                estimate=self._estimate,
            )
            await take("keep_tool_results", outcome)
        if tokens >= target:
            outcome = microcompact(current, cfg.keep_recent, estimate=self._estimate)
            await take("microcompact", outcome)
        if tokens >= target and self.summarizer is not None:
            report = await self._summary_step(current, tokens)
            if report is not None:
                step, compacted = report
                steps.append(step)
                if compacted is not None:
                    current, tokens = compacted, step.tokens_after
        return result(current, tokens, steps)

    async def _summary_step(
        self, messages: list[Message], tokens: int
    ) -> tuple[StepReport, list[Message] | None] | None:
        """Run the summary step; None when it did not run (breaker, nothing to do)."""
        cfg = self.config
        assert self.summarizer is not None
        now = trio.current_time()
        if not self.breaker.allows(now):
            return None
        plan = plan_summary(messages, cfg.keep_recent, cfg.protect_head)
        if plan is None:
            return None
        region = messages[plan.head_end : plan.tail_start]
        try:
            summary = await summarize(
                self.summarizer,
                region,
                timeout=cfg.summary_timeout,
                max_input_tokens=cfg.summary_input_tokens,
                message_chars=cfg.summary_message_chars,
                max_tokens=cfg.summary_max_tokens,
            )
            compacted = apply_summary(messages, plan, summary, cfg.summary_role)
            after = await self._count(compacted)
            if after >= tokens:
                raise SummaryFailed(f"the summary did not shrink the conversation ({after} tokens)")
        except SummaryFailed as exc:
            self.breaker.failed(trio.current_time())
            failed = StepReport(
                name="summary",
                tokens_before=tokens,
                tokens_after=tokens,
                changed=0,
                error=exc.reason,
            )
            return failed, None
        self.breaker.succeeded()
        self.summaries += 1
        done = StepReport(
            name="summary", tokens_before=tokens, tokens_after=after, changed=len(region)
        )
        return done, compacted


def compactor_spec(
    name: str,
    *,
    config: CompactConfig | None = None,
    summarizer: Summarizer | None = None,
    estimator: TokenEstimator | None = None,
    shutdown: float = 5.0,
    mailbox_size: int = 1024,
    isolate: CircuitBreaker | None = DEFAULT_ISOLATION,
) -> ChildSpec[CompactorMsg]:
    """A :class:`Compactor` child called ``name``: a fresh actor per (re)start,
    all of them sharing one summary breaker (an open breaker stays open across a
    restart). ``isolate`` parks a compactor that keeps crashing (``ActorParked`` to its
    askers for a while; its crashes never use up its supervisor's restart intensity)."""
    cfg = config or CompactConfig()
    breaker = SummaryBreaker(cfg.max_failures, cfg.breaker_cooldown)
    return ChildSpec(
        name,
        _factory(cfg, summarizer, estimator, breaker),
        shutdown=shutdown,
        mailbox_size=mailbox_size,
        isolate=isolate,
    )


def _factory(
    config: CompactConfig,
    summarizer: Summarizer | None,
    estimator: TokenEstimator | None,
    breaker: SummaryBreaker,
) -> Callable[[], Compactor]:
    def make() -> Compactor:
        return Compactor(config, summarizer=summarizer, estimator=estimator, breaker=breaker)

    return make
