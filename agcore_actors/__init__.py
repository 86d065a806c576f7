"""agcore-actors: LLM agents as trio actors.

The actor runtime is in :mod:`agcore_actors.actor`; its public names are
re-exported here.
"""

from .actor import *  # noqa: F403
from .actor import __all__ as _actor_all

__version__ = "0.1.0"

__all__ = [*_actor_all, "__version__"]
