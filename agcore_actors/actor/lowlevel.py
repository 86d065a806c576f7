"""Mechanics for code that builds on the actor runtime itself.

Application code rarely needs these; test kits, adapters and other runtimes
do:

- :func:`is_cancellation` / :func:`unwrap_group`: tell a cancellation from a
  failure in what a task or nursery raised;
- :func:`roundtrip` / :func:`declared_type`: the strict-mode copy of a
  message, and the reply or event type a request declares;
- :func:`message_types` / :func:`declared_message_type` / :func:`accepted`:
  the message classes an actor class accepts (what every send checks);
- :func:`defer_reply` / :class:`DeferredReply`: a serial actor's handler hands its
  request's reply over, to be given once work elsewhere (a batch, a thread) is done.
"""

from __future__ import annotations

from .._exports import publish
from ._accept import Accepted, accepted, declared_message_type, message_types, runtime_types
from ._cancel import is_cancellation, unwrap_group
from ._codec import declared_type, roundtrip
from ._deferred import DeferredReply, defer_reply

__all__ = [
    "Accepted",
    "DeferredReply",
    "accepted",
    "declared_message_type",
    "declared_type",
    "defer_reply",
    "is_cancellation",
    "message_types",
    "roundtrip",
    "runtime_types",
    "unwrap_group",
]

publish(__name__, __all__)
