"""The base types of messages that expect a reply or a stream of events.

A message class declares its reply type by deriving from ``Request[R]``::

    class Get(Request[int], frozen=True, tag=True):
        key: str

``await ref.ask(Get("a"))`` is then typed ``int``. Messages that are only
told derive from ``msgspec.Struct`` directly. Request carries no fields, so
it composes with msgspec tagged unions.

A message class deriving from ``StreamRequest[E]`` asks for a stream: its
handler *returns* an async iterator (typically an async generator) of ``E``,
and the caller reads it with ``async with ref.stream(msg) as events``.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

# Covariant: a request answered with an int is a request answered with an object.
R = TypeVar("R", covariant=True)
E = TypeVar("E", covariant=True)


class Request(msgspec.Struct, Generic[R], frozen=True):
    """A message whose handler's return value is the reply, of type ``R``."""


class StreamRequest(msgspec.Struct, Generic[E], frozen=True):
    """A message whose handler returns an async iterator of events of type ``E``."""
