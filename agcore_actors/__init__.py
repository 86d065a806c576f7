"""agcore-actors: LLM agents as trio actors.

The actor runtime is in :mod:`agcore_actors.actor`; its public names are
re-exported here, with :class:`AgcoreError`, the root of every error the library
raises (the tree is drawn in :mod:`agcore_actors._errors` and ``docs/errors.md``).
"""

from ._errors import AgcoreError
from ._exports import publish
from .actor import *  # noqa: F403
from .actor import __all__ as _actor_all

__version__ = "0.1.0"  # the one place: pyproject.toml reads it from here

__all__ = ["AgcoreError", *_actor_all, "__version__"]

publish(__name__, ["AgcoreError"])
