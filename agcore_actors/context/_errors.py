"""The context layer's leaves of the error tree.

::

    CompactError                  the root (an AgcoreError)
    ├── ContextOverflow           over budget with auto_compress off; nothing changed
    ├── InvalidCompactRequest     ValueError: a bad argument; nothing was done
    ├── InvalidCompactConfig      ValueError: a configuration that leaves no budget
    ├── SummaryFailed             the summary step produced nothing usable
    │   └── SummaryTimeout        TimeoutError: no summary within ``seconds``
    └── TokenizerUnavailable      a tokenizer cannot count here
        └── TokenizerTimeout      TimeoutError: the tokenizer did not answer in time

The :class:`~agcore_actors.context.Compactor` answers its asker with
:class:`ContextOverflow` and :class:`InvalidCompactRequest` and keeps running.
:class:`SummaryFailed` never reaches the asker: the report records its reason and
the breaker counts it. :class:`TokenizerUnavailable` makes the compactor fall back
to the heuristic estimate.
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError


class CompactError(AgcoreError):
    """Base of the context layer's errors."""

    kind: ClassVar[str] = "compact"


class ContextOverflow(CompactError):
    """The conversation is over its budget and ``auto_compress`` is off.

    ``tokens`` is the estimate (including the scratch message), ``budget`` the
    limit it was measured against. Nothing was changed.
    """

    kind: ClassVar[str] = "context_overflow"

    def __init__(self, tokens: int, budget: int) -> None:
        super().__init__(
            f"context overflow: about {tokens} tokens against a budget of {budget} "
            "and auto_compress is off"
        )
        self.tokens = tokens
        self.budget = budget


class InvalidCompactRequest(CompactError, ValueError):
    """A request with a bad argument (negative budget, ...); nothing was done."""

    kind: ClassVar[str] = "compact_invalid_request"


class InvalidCompactConfig(CompactError, ValueError):
    """A configuration that leaves no budget (the window minus what it reserves
    is not positive): every conversation would be over it."""

    kind: ClassVar[str] = "compact_invalid_config"


class SummaryFailed(CompactError):
    """The summary step did not produce a usable summary; ``reason`` says why."""

    kind: ClassVar[str] = "summary_failed"

    def __init__(self, reason: str) -> None:
        super().__init__(f"summary failed: {reason}")
        self.reason = reason


class SummaryTimeout(SummaryFailed, TimeoutError):
    """The summarizer gave no answer within ``seconds``."""

    kind: ClassVar[str] = "summary_timeout"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no summary within {seconds:g} s")
        self.seconds = seconds


class TokenizerUnavailable(CompactError):
    """A tokenizer cannot be used here (not installed, encoding not available
    offline, server unreachable); ``reason`` says why."""

    kind: ClassVar[str] = "tokenizer_unavailable"

    def __init__(self, tokenizer: str, reason: str) -> None:
        super().__init__(f"tokenizer {tokenizer!r} is unavailable: {reason}")
        self.tokenizer = tokenizer
        self.reason = reason


class TokenizerTimeout(TokenizerUnavailable, TimeoutError):
    """A tokenizer server gave no answer within ``seconds``."""

    kind: ClassVar[str] = "tokenizer_timeout"

    def __init__(self, tokenizer: str, seconds: float) -> None:
        super().__init__(tokenizer, f"no answer within {seconds:g} s")
        self.seconds = seconds
