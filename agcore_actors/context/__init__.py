"""Context management: token estimates, compaction steps, the Compactor actor.

::

    compactor = await system.spawn(
        lambda: Compactor(CompactConfig(context_window=32_000), summarizer=ProviderSummarizer(llm)),
        name="compactor",
    )
    result = await compactor.ask(Compact(history, scratch="time: 12:00"))
    send(result.messages); history = result.history

The actor's protocol is :mod:`agcore_actors.context.messages`; the steps are
pure functions (:func:`microcompact`, :func:`keep_tool_results`,
:func:`plan_summary` / :func:`apply_summary`) usable without an actor.
"""

from ._actor import Compactor
from ._errors import (
    CompactError,
    ContextOverflow,
    InvalidCompactRequest,
    SummaryFailed,
    SummaryTimeout,
    TokenizerTimeout,
    TokenizerUnavailable,
)
from ._pairs import block_starts, cut_after, cut_before, system_prefix_len
from ._policy import (
    AUTOCOMPACT_BUFFER_TOKENS,
    KEEP_RECENT,
    MAX_CONSECUTIVE_FAILURES,
    RESERVED_OUTPUT_TOKENS,
    Breaker,
    CompactConfig,
    allows,
    record_failure,
    record_success,
    should_compact,
)
from ._server_tokens import ServerTokenizer
from ._steps import OMITTED, PRUNED, StepOutcome, keep_tool_results, microcompact
from ._summarizers import HttpSummarizer, ProviderSummarizer
from ._summary import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_PREFIX,
    Summarizer,
    SummaryPlan,
    apply_summary,
    plan_summary,
    render_transcript,
    summarize,
    summary_request,
    summary_step,
)
from ._tiktoken import TiktokenEstimator
from ._tokens import (
    MESSAGE_OVERHEAD,
    HeuristicEstimator,
    PartCosts,
    TokenEstimator,
    estimate_message_tokens,
    estimate_part_tokens,
    estimate_text_tokens,
    estimate_tokens,
)
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

__all__ = [
    "AUTOCOMPACT_BUFFER_TOKENS",
    "KEEP_RECENT",
    "MAX_CONSECUTIVE_FAILURES",
    "MESSAGE_OVERHEAD",
    "OMITTED",
    "PRUNED",
    "RESERVED_OUTPUT_TOKENS",
    "SUMMARY_INSTRUCTIONS",
    "SUMMARY_PREFIX",
    "Breaker",
    "Compact",
    "CompactAfterOverflow",
    "CompactConfig",
    "CompactError",
    "CompactReport",
    "CompactResult",
    "Compactor",
    "CompactorMsg",
    "CompactorStatus",
    "ContextOverflow",
    "GetCompactorStatus",
    "HeuristicEstimator",
    "HttpSummarizer",
    "InvalidCompactRequest",
    "PartCosts",
    "ProviderSummarizer",
    "ServerTokenizer",
    "StepOutcome",
    "StepReport",
    "Summarizer",
    "SummaryFailed",
    "SummaryPlan",
    "SummaryTimeout",
    "TiktokenEstimator",
    "TokenEstimator",
    "TokenizerTimeout",
    "TokenizerUnavailable",
    "allows",
    "apply_summary",
    "block_starts",
    "cut_after",
    "cut_before",
    "estimate_message_tokens",
    "estimate_part_tokens",
    "estimate_text_tokens",
    "estimate_tokens",
    "keep_tool_results",
    "microcompact",
    "plan_summary",
    "record_failure",
    "record_success",
    "render_transcript",
    "should_compact",
    "summarize",
    "summary_request",
    "summary_step",
    "system_prefix_len",
]
