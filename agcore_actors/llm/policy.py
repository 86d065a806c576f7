"""The policy tier: pure decisions of the LLM layer (no event loop, no I/O).

Retry (whether and when: :func:`retry_decision`, :func:`retry_delay` on the runtime's
:class:`~agcore_actors.actor.policy.Backoff`, :func:`parse_retry_after`), error
classification (an HTTP status or an in-stream error report to its typed error),
and usage arithmetic (each provider's counting convention to the canonical
:class:`~agcore_actors.llm.Usage`, cost, a tracker). Property-test them without trio.
"""

from __future__ import annotations

from .._exports import publish
from ._hooks import DEFAULT_BLOCK_REASON
from ._http import status_error
from ._retry import RetryDecision, parse_retry_after, retry_after_of, retry_decision, retry_delay
from ._stream_errors import stream_error
from ._usage import ZERO_USAGE, CostTracker, cost, usage_from_anthropic, usage_from_openai

__all__ = [
    "DEFAULT_BLOCK_REASON",
    "ZERO_USAGE",
    "CostTracker",
    "RetryDecision",
    "cost",
    "parse_retry_after",
    "retry_after_of",
    "retry_decision",
    "retry_delay",
    "status_error",
    "stream_error",
    "usage_from_anthropic",
    "usage_from_openai",
]

publish(__name__, __all__)
