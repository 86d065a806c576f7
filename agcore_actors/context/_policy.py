"""Compaction policy: the budget arithmetic, the failure breaker, the config.

Pure data and functions; the :class:`~agcore_actors.context.Compactor`
applies them. Times are trio clock readings passed in by the caller.
"""

from __future__ import annotations

from typing import Literal

import msgspec

#: The seed's constants (``compact.rs``).
AUTOCOMPACT_BUFFER_TOKENS = 13_000
RESERVED_OUTPUT_TOKENS = 20_000
MAX_CONSECUTIVE_FAILURES = 3
KEEP_RECENT = 6


class CompactConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How the compactor decides and compacts.

    Budget: ``threshold() = context_window - reserved_tokens - buffer_tokens``
    (saturating at 0): 95,000 with the defaults. A conversation estimated at
    or above the budget is compacted.

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
    blocks) stay, the middle is summarised. The summariser sees at most
    ``summary_input_tokens`` of transcript (each message clipped to
    ``summary_message_chars``), may answer with ``summary_max_tokens``, and
    gets ``summary_timeout`` seconds.

    Breaker: after ``max_failures`` consecutive summary failures (error,
    timeout, a summary that does not shrink the conversation) the summary
    step is skipped for ``breaker_cooldown`` seconds; then one trial runs
    (half-open), and a success closes the breaker.

    ``auto_compress = False`` (seed 004): an over-budget conversation is an
    error (:class:`ContextOverflow`) instead of being compacted.
    """

    context_window: int = 128_000
    reserved_tokens: int = RESERVED_OUTPUT_TOKENS
    buffer_tokens: int = AUTOCOMPACT_BUFFER_TOKENS
    keep_recent: int = KEEP_RECENT
    keep_tool_result: int = -1
    keep_tool_result_include_user: bool = False
    auto_compress: bool = True
    protect_head: int = 1
    summary_input_tokens: int = 16_000
    summary_message_chars: int = 4_000
    summary_max_tokens: int = 1_024
    summary_timeout: float = 120.0
    summary_role: Literal["user", "system"] = "user"
    max_failures: int = MAX_CONSECUTIVE_FAILURES
    breaker_cooldown: float = 300.0

    def __post_init__(self) -> None:
        for field in ("context_window", "reserved_tokens", "buffer_tokens", "keep_recent"):
            if getattr(self, field) < 0:
                raise ValueError(f"{field} must be >= 0")
        if self.keep_tool_result < -1:
            raise ValueError("keep_tool_result must be >= -1")
        if self.protect_head < 0:
            raise ValueError("protect_head must be >= 0")
        if self.max_failures < 1:
            raise ValueError("max_failures must be >= 1")
        if self.summary_timeout <= 0 or self.breaker_cooldown < 0:
            raise ValueError("summary_timeout must be > 0 and breaker_cooldown >= 0")
        if self.summary_input_tokens < 1 or self.summary_max_tokens < 1:
            raise ValueError("summary_input_tokens and summary_max_tokens must be >= 1")

    def threshold(self) -> int:
        """``context_window - reserved_tokens - buffer_tokens``, at least 0."""
        return max(0, self.context_window - self.reserved_tokens - self.buffer_tokens)


def should_compact(tokens: int, budget: int) -> bool:
    """The seed's trigger: compact at or above the budget."""
    return tokens >= budget


class Breaker(msgspec.Struct, frozen=True):
    """Consecutive summary failures; open from the ``max_failures``-th on.

    ``opened_at`` is the trio time of the failure that opened (or re-opened)
    it. Transitions are the functions below; the state is immutable.
    """

    consecutive_failures: int = 0
    opened_at: float | None = None

    def is_open(self) -> bool:
        return self.opened_at is not None


def record_failure(breaker: Breaker, now: float, max_failures: int) -> Breaker:
    """One more failure; opens (or re-opens, after a failed trial) at ``max_failures``."""
    failures = breaker.consecutive_failures + 1
    opened = now if failures >= max_failures else None
    return Breaker(failures, opened)


def record_success(breaker: Breaker) -> Breaker:
    """A success closes the breaker and clears the count."""
    return Breaker()


def allows(breaker: Breaker, now: float, cooldown: float) -> bool:
    """Whether a summary may be tried: closed, or open for ``cooldown`` s (one trial)."""
    return breaker.opened_at is None or now - breaker.opened_at >= cooldown
