"""Eviction policies: frozen configuration and pure choice functions.

Policies:

- :class:`NoEviction` — keep everything (the default).
- :class:`Ttl` — an item expires ``ttl`` seconds after ``created_at``
  (exactly at the cutoff counts as expired).
- :class:`Capacity` — keep the newest ``max_items`` (by ``created_at``, ties
  by write order).
- :class:`Lru` — keep the ``max_items`` most recently used (a ``get`` or a
  write is a use; ties cannot happen, use order is a counter, not a clock).
- :class:`RecallBased` — keep the ``max_items`` most valuable, where
  ``value = ln(1 + recalls)·0.3 + mean recall score·0.5 + recency·0.2`` and
  ``recency = 0.5 ** (age / half_life)`` with age measured from the last
  recall (or from ``created_at`` if never recalled, so that a fresh item is not
  the first victim). Lowest value goes first; ties by age, oldest first.
- :class:`Hybrid` — a TTL and a capacity together.

Rules every store applies:

- An expired item is invisible to ``get``, ``list`` and searches from the
  moment it expires, whether or not a sweep has removed it yet.
- A capacity bound is enforced on every write, so a store never holds more
  than ``max_items`` unpinned visible items.
- A full sweep (expired items, then capacity) runs every ``check_interval``
  writes, on a schedule (``sweep_interval`` seconds, in the actor) and on
  demand.
- Pinned items never expire, are never evicted and do not count toward
  ``max_items``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import attrs

from .._validators import non_negative, optional_positive, positive


def _count(instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    """A whole number ``>= 0``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{attribute.name} must be an integer, not {value!r}")
    non_negative(instance, attribute, value)


@attrs.frozen
class NoEviction:
    """Never evict."""


@attrs.frozen
class Ttl:
    """Expire items ``ttl`` seconds after their ``created_at``."""

    #: Seconds an unpinned item stays visible after its ``created_at``.
    ttl: float = attrs.field(validator=non_negative)


@attrs.frozen
class _Bounded:
    #: Bound on unpinned items; beyond it, items go in the policy's order.
    max_items: int = attrs.field(validator=_count)


@attrs.frozen
class Capacity(_Bounded):
    """Keep the newest ``max_items`` items (the oldest ``created_at`` go first)."""


@attrs.frozen
class Lru(_Bounded):
    """Keep the ``max_items`` most recently used items."""


@attrs.frozen
class RecallBased(_Bounded):
    """Keep the ``max_items`` items of highest recall value (see module doc)."""

    #: Weight of ``ln(1 + recalls)``.
    recall_weight: float = attrs.field(default=0.3, validator=non_negative)
    #: Weight of the mean recall score.
    score_weight: float = attrs.field(default=0.5, validator=non_negative)
    #: Weight of the recency ``0.5 ** (age / recency_half_life)``.
    recency_weight: float = attrs.field(default=0.2, validator=non_negative)
    #: Age (seconds) at which recency has halved; one week by default.
    recency_half_life: float = attrs.field(default=7 * 86400.0, validator=positive)


@attrs.frozen
class Hybrid:
    """A TTL and a capacity (keep newest) together; either may be None."""

    #: Seconds an unpinned item stays visible; None: no TTL.
    ttl: float | None = attrs.field(default=None, validator=attrs.validators.optional(non_negative))
    #: Bound on unpinned items (the oldest go first); None: no bound.
    max_items: int | None = attrs.field(default=None, validator=attrs.validators.optional(_count))


EvictionPolicy = NoEviction | Ttl | Capacity | Lru | RecallBased | Hybrid


@attrs.frozen(kw_only=True)
class EvictionConfig:
    """A policy and when full sweeps run (see :func:`sweep_due`)."""

    #: What may be removed, and in which order.
    policy: EvictionPolicy = attrs.field(factory=NoEviction)
    #: A full sweep every this many writes (0 or 1: every write).
    check_interval: int = attrs.field(default=64, validator=_count)
    #: In the actor, a full sweep every this many seconds of trio time (None: none).
    sweep_interval: float | None = attrs.field(default=60.0, validator=optional_positive)


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


def can_evict(policy: EvictionPolicy) -> bool:
    """Whether the policy can ever remove an item (it has a TTL or a capacity)."""
    return ttl_of(policy) is not None or max_items_of(policy) is not None


def sweep_due(config: EvictionConfig, writes: int, unpinned: int) -> bool:
    """Whether a full sweep must run now, after a write.

    ``writes`` counts the writes since the last sweep (this one included) and
    ``unpinned`` the unpinned items stored (expired ones included). Never for a
    policy that cannot evict anything; otherwise every ``check_interval`` writes,
    and at once when the write took the store over its capacity.
    """
    if not can_evict(config.policy):
        return False
    cap = max_items_of(config.policy)
    return writes >= max(1, config.check_interval) or (cap is not None and unpinned > cap)


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


def recall_base(policy: RecallBased, recall_count: int, recall_score_total: float) -> float:
    """The part of an item's recall value that only a recall changes:
    ``recall_value = recall_base + recency · recency_weight`` (summed in that order,
    so ``recall_value >= recall_base`` holds for floats too)."""
    avg = recall_score_total / recall_count if recall_count else 0.0
    return math.log1p(recall_count) * policy.recall_weight + avg * policy.score_weight


def recall_value(policy: RecallBased, item: ItemStats, now: float) -> float:
    """The designed RecallBased value of an item at ``now``."""
    last_used = (
        item.created_at if item.recalled_at is None else max(item.created_at, item.recalled_at)
    )
    recency: float = 0.5 ** (max(0.0, now - last_used) / policy.recency_half_life)
    base = recall_base(policy, item.recall_count, item.recall_score_total)
    return base + recency * policy.recency_weight


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
