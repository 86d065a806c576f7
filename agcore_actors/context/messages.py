"""The Compactor's protocol: every request it accepts and its reply.

::

    Compact(messages, budget, scratch)                       -> CompactResult
    CompactAfterOverflow(messages, actual, limit, budget, scratch) -> CompactResult
    GetCompactorStatus()                                     -> CompactorStatus

- ``Compact``: ``messages`` to send now (the compacted history, then the
  ``scratch`` system message if one was given), ``history`` to store in place of
  the old one (never contains the scratch message), and a :class:`CompactReport`.
  A conversation under its budget comes back unchanged. ``budget`` is the
  prompt-token limit; None means the configured one (``CompactConfig.threshold()``).
- ``CompactAfterOverflow`` (reactive): the provider refused the messages as too
  long (``ContextLengthError``; ``actual``/``limit`` are its numbers, 0 when
  unknown). The compactor recalibrates its estimate from the numbers and compacts
  even if its own estimate said the messages fit.
- ``GetCompactorStatus``: the breaker, the calibration, the counters.

Cancelling the asker (or its ask timing out):

- of ``Compact`` or ``CompactAfterOverflow``: the summary call in flight is
  cancelled and nothing is kept; the breaker is left as it was (a cancellation
  is not a failure of the summarizer), the calibration keeps what an overflow
  taught it;
- of ``GetCompactorStatus``: nothing happens.

Errors (to the asker; the compactor keeps running):
:class:`~agcore_actors.context.ContextOverflow` when the conversation is over
budget and ``auto_compress`` is off;
:class:`~agcore_actors.context.InvalidCompactRequest` for a negative budget. A
failed summary is not an error: the report records it, the breaker counts it, and
the result is what the other steps achieved (``fits`` says whether that is within
the budget).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .._exports import publish
from ..actor import Request
from ..llm import ContextLengthError, Message

__all__ = [
    "Compact",
    "CompactAfterOverflow",
    "CompactReport",
    "CompactResult",
    "CompactorMsg",
    "CompactorReply",
    "CompactorStatus",
    "GetCompactorStatus",
    "StepName",
    "StepReport",
]

#: The compaction steps, in the order they run.
StepName = Literal["keep_tool_results", "microcompact", "summary"]


class StepReport(msgspec.Struct, frozen=True, kw_only=True):
    """One step that ran: ``changed`` counts replaced messages (for ``summary``:
    the messages summarised); ``error`` says why a summary failed."""

    name: StepName
    tokens_before: int
    tokens_after: int
    changed: int
    error: str | None = None


class CompactReport(msgspec.Struct, frozen=True, kw_only=True):
    """Estimates are the compactor's estimator times its calibration, and
    include the scratch message (``scratch_tokens``)."""

    tokens_before: int
    tokens_after: int
    budget: int
    fits: bool
    steps: list[StepReport] = msgspec.field(default_factory=list)
    estimator: str = "heuristic"
    scratch_tokens: int = 0
    reactive: bool = False
    breaker_open: bool = False


class CompactResult(msgspec.Struct, frozen=True, kw_only=True):
    """What to send now (``messages``), what to store (``history``), and how."""

    messages: list[Message]
    history: list[Message]
    report: CompactReport


class CompactorStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The compactor's state: its summary breaker, calibration and counters."""

    consecutive_failures: int
    breaker_open: bool
    #: Factor applied to the estimator's counts (1.0 until an overflow said otherwise).
    calibration: float
    compactions: int
    summaries: int


class Compact(Request[CompactResult], frozen=True, tag=True, kw_only=True):
    """Fit ``messages`` (plus the scratch message) into the budget."""

    messages: list[Message]
    #: The prompt-token limit; None: the configured threshold.
    budget: int | None = None
    #: Per-turn metadata sent as a trailing system message, never stored.
    scratch: str | None = None


class CompactAfterOverflow(Request[CompactResult], frozen=True, tag=True, kw_only=True):
    """Compact ``messages`` that the provider refused as too long."""

    messages: list[Message]
    #: The provider's count of the refused prompt (0: unknown).
    actual: int = 0
    #: The provider's context window (0: unknown).
    limit: int = 0
    budget: int | None = None
    scratch: str | None = None

    @classmethod
    def from_error(
        cls,
        messages: list[Message],
        error: ContextLengthError,
        *,
        budget: int | None = None,
        scratch: str | None = None,
    ) -> CompactAfterOverflow:
        """The request for the messages the provider refused with ``error``."""
        return cls(
            messages=messages,
            actual=error.actual,
            limit=error.limit,
            budget=budget,
            scratch=scratch,
        )


class GetCompactorStatus(Request[CompactorStatus], frozen=True, tag=True):
    """The compactor's breaker, calibration and counters."""


#: Every reply the Compactor gives.
CompactorReply = CompactResult | CompactorStatus

CompactorMsg = Compact | CompactAfterOverflow | GetCompactorStatus

publish(__name__, __all__)
