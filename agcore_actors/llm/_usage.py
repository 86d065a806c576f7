"""Token usage in one canonical shape, and a tracker of it.

Providers count differently, so each adapter converts at its boundary:

- OpenAI: ``prompt_tokens`` INCLUDES the cached tokens
  (``prompt_tokens_details.cached_tokens``; DeepSeek reports
  ``prompt_cache_hit_tokens``), ``completion_tokens`` includes
  ``completion_tokens_details.reasoning_tokens``;
- Anthropic: ``input_tokens`` EXCLUDES ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens``.

Canonical :class:`Usage`: ``input_tokens`` are the input tokens billed at the
normal rate (neither read from nor written to a cache); ``cache_read_tokens``
and ``cache_write_tokens`` are kept apart; ``output_tokens`` are all
generated tokens and ``reasoning_tokens`` the part of them spent thinking (a
breakdown, not an addition).

Both converters clamp every count a server reports to ``0 .. MAX_COUNT``: JSON allows
integers of any size, and a sum, a metric or the store needs them within 64 bits.
"""

from __future__ import annotations

import msgspec

#: The largest token count a converter keeps (a trillion; sums stay within 64 bits).
MAX_COUNT = 10**12


def _count(value: int) -> int:
    return max(0, min(value, MAX_COUNT))


class Usage(msgspec.Struct, frozen=True, gc=False):
    """Tokens of one reply (or a sum of replies) in the canonical convention above."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        """Every input token, cached or not (OpenAI's ``prompt_tokens``)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def total_tokens(self) -> int:
        """Every input and output token."""
        return self.total_input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def is_empty(self) -> bool:
        """True when no token was counted."""
        return self.total_tokens == 0


#: No tokens (a shared instance: Usage is frozen).
ZERO_USAGE = Usage()


def usage_from_openai(
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
) -> Usage:
    """OpenAI counts cached tokens inside ``prompt_tokens``: take them out."""
    prompt, completion = _count(prompt_tokens), _count(completion_tokens)
    cached = min(_count(cached_tokens), prompt)
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=completion,
        cache_read_tokens=cached,
        reasoning_tokens=min(_count(reasoning_tokens), completion),
    )


def usage_from_anthropic(
    input_tokens: int,
    output_tokens: int,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
) -> Usage:
    """Anthropic counts cache reads and writes outside ``input_tokens``."""
    return Usage(
        input_tokens=_count(input_tokens),
        output_tokens=_count(output_tokens),
        cache_read_tokens=_count(cache_read_input_tokens),
        cache_write_tokens=_count(cache_creation_input_tokens),
    )


class Pricing(msgspec.Struct, frozen=True):
    """Prices in currency units per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


def cost(usage: Usage, pricing: Pricing) -> float:
    """What ``usage`` costs at ``pricing``."""
    return (
        usage.input_tokens * pricing.input
        + usage.output_tokens * pricing.output
        + usage.cache_read_tokens * pricing.cache_read
        + usage.cache_write_tokens * pricing.cache_write
    ) / 1_000_000


class CostTracker:
    """Cumulative usage plus the last call's.

    Every counter is accumulated, the cache and reasoning ones included. Not
    thread-safe; owned by one actor.
    """

    __slots__ = ("calls", "last", "pricing", "total")

    def __init__(self, pricing: Pricing | None = None) -> None:
        self.pricing = pricing
        self.total = ZERO_USAGE
        self.last = ZERO_USAGE
        self.calls = 0

    def add(self, usage: Usage) -> None:
        """Count one call's usage."""
        self.total = self.total + usage
        self.last = usage
        self.calls += 1

    def reset(self) -> None:
        """Forget everything counted."""
        self.total = self.last = ZERO_USAGE
        self.calls = 0

    @property
    def cost(self) -> float:
        """The total's cost (0 without pricing)."""
        return 0.0 if self.pricing is None else cost(self.total, self.pricing)
