"""The lease keeper's pure decisions (see :mod:`agcore_actors.cluster._policy`)."""

from __future__ import annotations

from .._exports import publish
from ._policy import (
    Held,
    LeaseTiming,
    RenewalOutcome,
    after_renewal,
    fence_deadline,
    next_renewal,
    overdue,
)

__all__ = [
    "Held",
    "LeaseTiming",
    "RenewalOutcome",
    "after_renewal",
    "fence_deadline",
    "next_renewal",
    "overdue",
]

publish(__name__, __all__)
