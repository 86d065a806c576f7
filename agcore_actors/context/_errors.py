"""Errors the Compactor answers with (expected errors: the actor keeps running)."""

from __future__ import annotations


class CompactError(Exception):
    """Base of the compactor's errors."""


class ContextOverflow(CompactError):
    """The conversation is over its budget and ``auto_compress`` is off (seed 004).

    ``tokens`` is the estimate (including the scratch message), ``budget`` the
    limit it was measured against. Nothing was changed.
    """

    def __init__(self, tokens: int, budget: int) -> None:
        super().__init__(
            f"context overflow: about {tokens} tokens against a budget of {budget} "
            "and auto_compress is off"
        )
        self.tokens = tokens
        self.budget = budget


class InvalidCompactRequest(CompactError, ValueError):
    """A request with a bad argument (negative budget, ...); nothing was done."""
