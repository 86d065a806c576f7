"""Eviction policies: frozen configuration and pure choice functions.

Policies (the seed's, plus its designed-but-unbuilt ones):

- :class:`NoEviction` — keep everything (the default).
- :class:`Ttl` — an item expires ``ttl`` seconds after ``created_at``
  (exactly at the cutoff counts as expired, as in the seed).
- :class:`Capacity` — keep the newest ``max_items`` (by ``created_at``, ties
  by write order).
- :class:`Lru` — keep the ``max_items`` most recently used (a ``get`` or a
  write is a use; ties cannot happen, use order is a counter, not a clock).
- :class:`RecallBased` — keep the ``max_items`` most valuable, where
  ``value = ln(1 + recalls)·0.3 + mean recall score·0.5 + recency·0.2`` and
  ``recency = 0.5 ** (age / half_life)`` with age measured from the last
  recall (or from ``created_at`` if never recalled, so that a fresh item is not
  the first victim). Lowest value goes first; ties by age, oldest first.
- :class:`Hybrid` — a TTL and a capacity together (designed in the seed).

Rules every store applies (these fix the seed's lazy eviction):

- An expired item is invisible to ``get``, ``list`` and searches from the
  moment it expires, whether or not a sweep has removed it yet.
- A capacity bound is enforced on every write, so a store never holds more
  than ``max_items`` unpinned items (the seed could overshoot by
  ``check_interval - 1``).
- A full sweep (expired items, then capacity) runs every ``check_interval``
  writes, on a schedule (``sweep_interval`` seconds, in the actor) and on
  demand.
- Pinned items never expire, are never evicted and do not count toward
  ``max_items``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import msgspec


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


class NoEviction(msgspec.Struct, frozen=True, tag="none"):
    """Never evict."""


class Ttl(msgspec.Struct, frozen=True, tag="ttl"):
    """Expire items ``ttl`` seconds after their ``created_at``."""

    ttl: float

    def __post_init__(self) -> None:
        _check(self.ttl >= 0, f"ttl must be >= 0 seconds, not {self.ttl!r}")


class Capacity(msgspec.Struct, frozen=True, tag="capacity"):
    """Keep the newest ``max_items`` items."""

    max_items: int

    def __post_init__(self) -> None:
        _check(self.max_items >= 0, f"max_items must be >= 0, not {self.max_items!r}")


class Lru(msgspec.Struct, frozen=True, tag="lru"):
    """Keep the ``max_items`` most recently used items."""

    max_items: int

    def __post_init__(self) -> None:
        _check(self.max_items >= 0, f"max_items must be >= 0, not {self.max_items!r}")


class RecallBased(msgspec.Struct, frozen=True, tag="recall"):
    """Keep the ``max_items`` items of highest recall value (see module doc)."""

    max_items: int
    recall_weight: float = 0.3
    score_weight: float = 0.5
    recency_weight: float = 0.2
    #: Age (seconds) at which recency has halved; one week by default.
    recency_half_life: float = 7 * 86400.0

    def __post_init__(self) -> None:
        _check(self.max_items >= 0, f"max_items must be >= 0, not {self.max_items!r}")
        for name in ("recall_weight", "score_weight", "recency_weight"):
            _check(getattr(self, name) >= 0, f"{name} must be >= 0")
        _check(self.recency_half_life > 0, "recency_half_life must be > 0")


class Hybrid(msgspec.Struct, frozen=True, tag="hybrid"):
    """A TTL and a capacity (keep newest) together; either may be None."""

    ttl: float | None = None
    max_items: int | None = None

    def __post_init__(self) -> None:
        _check(self.ttl is None or self.ttl >= 0, "ttl must be >= 0 seconds")
        _check(self.max_items is None or self.max_items >= 0, "max_items must be >= 0")


EvictionPolicy = NoEviction | Ttl | Capacity | Lru | RecallBased | Hybrid


class EvictionConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A policy and when full sweeps run: every ``check_interval`` writes (the
    seed's default 64; 0 or 1 means every write) and, in the actor, every
    ``sweep_interval`` seconds of trio time (None: no scheduled sweep)."""

    policy: EvictionPolicy = NoEviction()
    check_interval: int = 64
    sweep_interval: float | None = 60.0

    def __post_init__(self) -> None:
        _check(self.check_interval >= 0, "check_interval must be >= 0")
        _check(self.sweep_interval is None or self.sweep_interval > 0, "sweep_interval must be > 0")


class ItemStats(NamedTuple):
    """What a policy looks at. ``seq`` is the store's write order and
    ``access_seq`` its use order (both strictly increasing counters)."""

    id: str
    created_at: float
    seq: int
    access_seq: int
    pinned: bool
    recall_count: int
    recall_score_total: float
    recalled_at: float | None


def ttl_of(policy: EvictionPolicy) -> float | None:
    """The policy's time to live, if it has one."""
    if isinstance(policy, Ttl | Hybrid):
        return policy.ttl
    return None


def max_items_of(policy: EvictionPolicy) -> int | None:
    """The policy's bound on unpinned items, if it has one."""
    if isinstance(policy, Capacity | Lru | RecallBased | Hybrid):
        return policy.max_items
    return None


def is_expired(policy: EvictionPolicy, created_at: float, pinned: bool, now: float) -> bool:
    """Whether an item is past its TTL at ``now`` (pinned items never are)."""
    ttl = ttl_of(policy)
    return ttl is not None and not pinned and created_at <= now - ttl


def expiry_cutoff(policy: EvictionPolicy, now: float) -> float | None:
    """Unpinned items with ``created_at <= cutoff`` are expired; None: no TTL."""
    ttl = ttl_of(policy)
    return None if ttl is None else now - ttl


def recall_value(policy: RecallBased, item: ItemStats, now: float) -> float:
    """The designed RecallBased value of an item at ``now``."""
    avg = item.recall_score_total / item.recall_count if item.recall_count else 0.0
    last_used = (
        item.created_at if item.recalled_at is None else max(item.created_at, item.recalled_at)
    )
    recency: float = 0.5 ** (max(0.0, now - last_used) / policy.recency_half_life)
    return (
        math.log1p(item.recall_count) * policy.recall_weight
        + avg * policy.score_weight
        + recency * policy.recency_weight
    )


def eviction_order(policy: EvictionPolicy, item: ItemStats, now: float) -> tuple[float, ...]:
    """Sort key: under a capacity bound, the smallest keys are evicted first."""
    if isinstance(policy, Lru):
        return (item.access_seq,)
    if isinstance(policy, RecallBased):
        return (recall_value(policy, item, now), item.created_at, item.seq)
    return (item.created_at, item.seq)


def choose_victims(policy: EvictionPolicy, items: Iterable[ItemStats], now: float) -> list[str]:
    """A full sweep's victims: every expired item, then, of the rest, the
    unpinned items beyond ``max_items`` in :func:`eviction_order`."""
    victims: list[str] = []
    live: list[ItemStats] = []
    for item in items:
        if item.pinned:
            continue
        if is_expired(policy, item.created_at, item.pinned, now):
            victims.append(item.id)
        else:
            live.append(item)
    cap = max_items_of(policy)
    if cap is not None and len(live) > cap:
        live.sort(key=lambda it: eviction_order(policy, it, now))
        victims.extend(it.id for it in live[: len(live) - cap])
    return victims


def needs_stats_scan(policy: EvictionPolicy) -> bool:
    """Whether choosing capacity victims needs every item's statistics (the
    value depends on ``now``), rather than an ordered index scan."""
    return isinstance(policy, RecallBased)
