"""Compaction policy: the budget arithmetic, the failure breaker, the config.

Pure data and functions; the :class:`~agcore_actors.context.Compactor`
applies them. Times are trio clock readings passed in by the caller.
"""

from __future__ import annotations

from typing import Literal

import attrs

from .._validators import non_negative, positive
from ._errors import InvalidCompactConfig

#: The caps of the reply reserve and the safety buffer, the breaker's threshold,
#: and how many recent messages the steps keep.
AUTOCOMPACT_BUFFER_TOKENS = 13_000
RESERVED_OUTPUT_TOKENS = 20_000
MAX_CONSECUTIVE_FAILURES = 3
KEEP_RECENT = 6


@attrs.frozen(kw_only=True)
class CompactConfig:
    """How the compactor decides and compacts.

    Budget: ``threshold() = context_window - reserved() - buffer()``. Unless set,
    the reserve for the reply is ``min(20,000, 5/32 of the window)`` and the
    safety buffer ``min(13,000, 13/128 of the window)``: a quarter of a small
    window, and 33,000 tokens from 128,000 up, so the budget is 23,750 for a
    32k window, 95,000 for 128k and 167,000 for 200k. A conversation estimated
    at or above the budget is compacted. A configuration whose budget is not
    positive is :class:`InvalidCompactConfig`.

    Steps, in order, each only while the conversation is still over budget:
    the keep-window (``keep_tool_result`` >= 0: all but the last N tool
    results become the omission placeholder; -1 turns it off), microcompact
    (tool results older than the last ``keep_recent`` messages become
    ``[pruned]``), and the LLM summary (when the compactor has a summarizer
    and the breaker allows it). The window goes first because it is the
    gentler of the two: it keeps the last N results even when they are older
    than the recent messages.

    Summary: the system prefix and the first ``protect_head`` other messages
    (the task) stay, the last ``keep_recent`` messages (widened to whole tool
    blocks) stay, the middle is summarised.

    Breaker: after ``max_failures`` consecutive summary failures (error,
    timeout, a summary that does not shrink the conversation) the summary
    step is skipped for ``breaker_cooldown`` seconds; then one trial runs
    (half-open), and a success closes the breaker.
    """

    #: The model's context window, in tokens.
    context_window: int = attrs.field(default=128_000, validator=non_negative)
    #: Room kept free for the model's reply (None: scaled to the window).
    reserved_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(non_negative)
    )
    #: A safety margin under the window, for estimation error (None: scaled).
    buffer_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(non_negative)
    )
    #: The newest messages no step changes (widened to whole tool blocks by the summary).
    keep_recent: int = attrs.field(default=KEEP_RECENT, validator=non_negative)
    #: The keep-window: keep the last N tool results whole (-1: off).
    keep_tool_result: int = attrs.field(default=-1, validator=attrs.validators.ge(-1))
    #: The keep-window also counts user messages as tool feedback (the first one stays).
    keep_tool_result_include_user: bool = False
    #: False: an over-budget conversation is :class:`ContextOverflow`, not compacted.
    auto_compress: bool = True
    #: Messages after the system prefix that the summary keeps (the task).
    protect_head: int = attrs.field(default=1, validator=non_negative)
    #: The most transcript the summarizer is shown, in tokens.
    summary_input_tokens: int = attrs.field(default=16_000, validator=positive)
    #: Each message is clipped to this many characters for the summarizer.
    summary_message_chars: int = attrs.field(default=4_000, validator=positive)
    #: The longest summary asked for (and kept), in tokens.
    summary_max_tokens: int = attrs.field(default=1_024, validator=positive)
    #: Seconds (trio's clock) the summarizer gets.
    summary_timeout: float = attrs.field(default=120.0, validator=positive)
    #: The role of the summary message.
    summary_role: Literal["user", "system"] = attrs.field(
        default="user", validator=attrs.validators.in_(("user", "system"))
    )
    #: Consecutive summary failures that open the breaker.
    max_failures: int = attrs.field(default=MAX_CONSECUTIVE_FAILURES, validator=positive)
    #: Seconds (trio's clock) the open breaker skips the summary step.
    breaker_cooldown: float = attrs.field(default=300.0, validator=non_negative)

    def __attrs_post_init__(self) -> None:
        if self.threshold() <= 0:
            raise InvalidCompactConfig(
                f"no budget: a window of {self.context_window} tokens minus "
                f"{self.reserved()} reserved and {self.buffer()} of buffer"
            )

    def reserved(self) -> int:
        """The tokens kept free for the model's reply."""
        if self.reserved_tokens is not None:
            return self.reserved_tokens
        return min(RESERVED_OUTPUT_TOKENS, self.context_window * 5 // 32)

    def buffer(self) -> int:
        """The safety margin under the window."""
        if self.buffer_tokens is not None:
            return self.buffer_tokens
        return min(AUTOCOMPACT_BUFFER_TOKENS, self.context_window * 13 // 128)

    def threshold(self) -> int:
        """The prompt-token budget: ``context_window - reserved() - buffer()``."""
        return self.context_window - self.reserved() - self.buffer()


def should_compact(tokens: int, budget: int) -> bool:
    """The trigger: compact at or above the budget."""
    return tokens >= budget
