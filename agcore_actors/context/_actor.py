"""The Compactor: a serial actor that fits conversations into their budget.

It holds the state compaction needs across turns: the summary failure
breaker and the estimate's calibration (learnt from context-length errors).
Steps, each only while the estimate is still at or over the budget: the
keep-window (when configured), microcompact, the LLM summary (when a
summarizer is configured and the breaker allows it). See
:mod:`agcore_actors.context.messages` for the protocol.

Cancellation: a cancelled ``Compact`` ask cancels the summary call in
flight; the breaker is then left as it was (a cancellation is not a
failure of the summarizer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import trio

from ..actor import Actor
from ..llm import Message, SystemMessage
from ._errors import ContextOverflow, InvalidCompactRequest, SummaryFailed, TokenizerUnavailable
from ._policy import Breaker, CompactConfig, allows, record_failure, record_success
from ._steps import StepOutcome, keep_tool_results, microcompact
from ._summary import Summarizer, apply_summary, plan_summary, summarize
from ._tokens import HeuristicEstimator, TokenEstimator, estimate_tokens
from .messages import (
    Compact,
    CompactAfterOverflow,
    CompactorMsg,
    CompactorStatus,
    CompactReport,
    CompactResult,
    GetCompactorStatus,
    StepReport,
)

#: A reactive compaction aims this far below the estimate that overflowed.
REACTIVE_SHRINK = 0.75
#: Without numbers from the provider, an overflow raises the calibration by this.
UNKNOWN_OVERFLOW_FACTOR = 1.25
MAX_CALIBRATION = 8.0


class Compactor(Actor[CompactorMsg]):
    """See the module doc. ``estimator`` defaults to the heuristic; without a
    ``summarizer`` the summary step is skipped."""

    expected_errors = (ContextOverflow, InvalidCompactRequest)

    def __init__(
        self,
        config: CompactConfig | None = None,
        *,
        summarizer: Summarizer | None = None,
        estimator: TokenEstimator | None = None,
    ) -> None:
        self.config = config or CompactConfig()
        self.summarizer = summarizer
        self.estimator: TokenEstimator = estimator or HeuristicEstimator()
        self.breaker = Breaker()
        self.calibration = 1.0
        self.compactions = 0
        self.summaries = 0
        self._estimator_note = self.estimator.name

    async def handle(self, msg: CompactorMsg) -> CompactResult | CompactorStatus:
        match msg:
            case Compact(messages=messages, budget=budget, scratch=scratch):
                return await self._compact(messages, budget, scratch, overflow=None)
            case CompactAfterOverflow(
                messages=messages, actual=actual, limit=limit, budget=budget, scratch=scratch
            ):
                return await self._compact(messages, budget, scratch, overflow=(actual, limit))
            case GetCompactorStatus():
                return CompactorStatus(
                    self.breaker.consecutive_failures,
                    self.breaker.is_open(),
                    self.calibration,
                    self.compactions,
                    self.summaries,
                )
        raise AssertionError(msg)  # pragma: no cover

    async def _raw_count(self, messages: Sequence[Message]) -> int:
        """The estimator's count; the heuristic when the estimator cannot count."""
        if not messages:
            return 0
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
                room = provider_limit - cfg.reserved_tokens - cfg.buffer_tokens
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
            return CompactResult([*history, *tail], history, report)

        if before < target:
            return result(list(messages), before, [])
        if not cfg.auto_compress:
            raise ContextOverflow(before + scratch_tokens, limit)
        self.compactions += 1

        current = list(messages)
        tokens = before
        steps: list[StepReport] = []

        async def take(name: str, outcome: StepOutcome) -> None:
            nonlocal current, tokens
            if not outcome.changed:
                return
            after = await self._count(outcome.messages)
            if after >= tokens:
                # The heuristic said smaller, the configured estimator disagrees:
                # keep the messages as they were.
                return
            steps.append(StepReport(name, tokens, after, outcome.changed))
            current, tokens = outcome.messages, after

        # Gentlest first: the keep-window keeps the last N tool results even
        # when they are older than the recent window, microcompact does not.
        if cfg.keep_tool_result >= 0:
            outcome = keep_tool_results(
                current,
                cfg.keep_tool_result,
                keep_recent=cfg.keep_recent,
                include_user=cfg.keep_tool_result_include_user,
            )
            await take("keep_tool_results", outcome)
        if tokens >= target:
            await take("microcompact", microcompact(current, cfg.keep_recent))
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
        if not allows(self.breaker, now, cfg.breaker_cooldown):
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
            self.breaker = record_failure(self.breaker, trio.current_time(), cfg.max_failures)
            return StepReport("summary", tokens, tokens, 0, exc.reason), None
        self.breaker = record_success(self.breaker)
        self.summaries += 1
        return StepReport("summary", tokens, after, len(region)), compacted
