"""The transcript rules every write of the session store keeps (pure functions)."""

from .._exports import publish
from ._rules import SYNTHETIC_RESULT, closed, pending_after, repaired, synthetic_results

__all__ = ["SYNTHETIC_RESULT", "closed", "pending_after", "repaired", "synthetic_results"]

publish(__name__, __all__)
