"""The policy tier of the agent layer: pure decisions (no event loop, no I/O).

Fallback (whether a failed model call moves to the next model of the chain:
:func:`falls_back`, :func:`fallback_kind`), budgets (:func:`exceeded`, :func:`price_of`,
:func:`spend_of` on :class:`Spend`), and the folding of guardrail and tool-hook
verdicts (:func:`apply_output_guardrails`, :func:`apply_before`, :func:`apply_after`).
Property-test them without trio.
"""

from __future__ import annotations

from .._exports import publish
from ._budget import SPEND_FACT, Spend, exceeded, price_of, spend_of
from ._fallback import ALL_FALLBACK_KINDS, fallback_kind, falls_back
from ._guards import apply_after, apply_before, apply_output_guardrails, blocked_note

__all__ = [
    "ALL_FALLBACK_KINDS",
    "SPEND_FACT",
    "Spend",
    "apply_after",
    "apply_before",
    "apply_output_guardrails",
    "blocked_note",
    "exceeded",
    "fallback_kind",
    "falls_back",
    "price_of",
    "spend_of",
]

publish(__name__, __all__)
