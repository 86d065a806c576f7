"""Pure context policy: the budget arithmetic, the breaker, the compaction steps
and the heuristic token estimate.

No I/O and no event loop: functions of frozen data, which the
:class:`~agcore_actors.context.Compactor` applies, usable on their own (a
conversation can be compacted with these alone, given a summary text).
"""

from .._exports import publish
from ._pairs import block_starts, cut_after, cut_before, system_prefix_len
from ._policy import (
    AUTOCOMPACT_BUFFER_TOKENS,
    KEEP_RECENT,
    MAX_CONSECUTIVE_FAILURES,
    RESERVED_OUTPUT_TOKENS,
    should_compact,
)
from ._steps import OMITTED, PRUNED, StepOutcome, keep_tool_results, microcompact
from ._summary import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_PREFIX,
    SummaryPlan,
    apply_summary,
    clip_summary,
    plan_summary,
    render_transcript,
    summary_request,
    summary_step,
)
from ._tokens import (
    MESSAGE_OVERHEAD,
    estimate_message_tokens,
    estimate_part_tokens,
    estimate_text_tokens,
    estimate_tokens,
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
    "StepOutcome",
    "SummaryPlan",
    "apply_summary",
    "block_starts",
    "clip_summary",
    "cut_after",
    "cut_before",
    "estimate_message_tokens",
    "estimate_part_tokens",
    "estimate_text_tokens",
    "estimate_tokens",
    "keep_tool_results",
    "microcompact",
    "plan_summary",
    "render_transcript",
    "should_compact",
    "summary_request",
    "summary_step",
    "system_prefix_len",
]

publish(__name__, __all__)
