"""The Compactor's protocol: what it accepts and what it answers.

- ``await compactor.ask(Compact(messages, budget, scratch))`` →
  :class:`CompactResult`: ``messages`` to send now (the compacted history,
  then the ``scratch`` system message if one was given), ``history`` to
  store in place of the old one (never contains the scratch message), and a
  :class:`CompactReport` (estimates before and after, the steps applied).
  A conversation under its budget comes back unchanged. ``budget`` is the
  prompt-token limit; None means the configured threshold
  (window - reserved - buffer, 95,000 by default).
- ``CompactAfterOverflow`` (reactive): the provider refused the messages as
  too long (``ContextLengthError``; ``actual``/``limit`` are its numbers, 0
  when unknown). The compactor recalibrates its estimate from the numbers
  and compacts even if its own estimate said the messages fit.
- ``GetCompactorStatus`` → :class:`CompactorStatus` (breaker, calibration,
  counters).

Errors (raised to the asker, the compactor keeps running):
:class:`~agcore_actors.context.ContextOverflow` when the conversation is over
budget and ``auto_compress`` is off; :class:`~agcore_actors.context.InvalidCompactRequest`
for a negative budget. A failed summary is not an error: the report records
it, the breaker counts it, and the result is what the other steps achieved
(``fits`` says whether that is within the budget).
"""

from __future__ import annotations

import msgspec

from ..actor import Request
from ..llm import ContextLengthError, Message


class StepReport(msgspec.Struct, frozen=True):
    """One step that ran: ``name`` is ``microcompact``, ``keep_tool_results``
    or ``summary``; ``changed`` counts replaced messages (for ``summary``: the
    messages summarised); ``error`` says why a summary failed."""

    name: str
    tokens_before: int
    tokens_after: int
    changed: int
    error: str | None = None


class CompactReport(msgspec.Struct, frozen=True):
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


class CompactResult(msgspec.Struct, frozen=True):
    messages: list[Message]
    history: list[Message]
    report: CompactReport


class Compact(Request[CompactResult], frozen=True, tag=True):
    messages: list[Message]
    budget: int | None = None
    #: Per-turn metadata sent as a trailing system message, never stored.
    scratch: str | None = None


class CompactAfterOverflow(Request[CompactResult], frozen=True, tag=True):
    messages: list[Message]
    actual: int = 0
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
        return cls(messages, error.actual, error.limit, budget, scratch)


class CompactorStatus(msgspec.Struct, frozen=True):
    consecutive_failures: int
    breaker_open: bool
    #: Factor applied to the estimator's counts (1.0 until an overflow said otherwise).
    calibration: float
    compactions: int
    summaries: int


class GetCompactorStatus(Request[CompactorStatus], frozen=True, tag=True):
    pass


CompactorMsg = Compact | CompactAfterOverflow | GetCompactorStatus
