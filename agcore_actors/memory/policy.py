"""Pure memory policy: eviction choice and retrieval scoring.

No I/O and no event loop: functions of frozen data, which the stores and the
:class:`~agcore_actors.memory.MemoryStore` apply, and which tests check against
independent models.
"""

from .._exports import publish
from ._eviction import (
    ItemStats,
    can_evict,
    choose_victims,
    eviction_order,
    expiry_cutoff,
    is_expired,
    max_items_of,
    recall_value,
    sweep_due,
    ttl_of,
)
from ._fusion import fuse_scores
from ._text import (
    DEFAULT_STOP_WORDS,
    extract_keywords,
    text_overlap_dice,
    text_overlap_score,
    tokens,
)

__all__ = [
    "DEFAULT_STOP_WORDS",
    "ItemStats",
    "can_evict",
    "choose_victims",
    "eviction_order",
    "expiry_cutoff",
    "extract_keywords",
    "fuse_scores",
    "is_expired",
    "max_items_of",
    "recall_value",
    "sweep_due",
    "text_overlap_dice",
    "text_overlap_score",
    "tokens",
    "ttl_of",
]

publish(__name__, __all__)
