"""The base type of messages that expect a reply.

A message class declares its reply type by deriving from ``Request[R]``::

    class Get(Request[int], frozen=True, tag=True):
        key: str

``await ref.ask(Get("a"))`` is then typed ``int``. Messages that are only
told derive from ``msgspec.Struct`` directly. Request carries no fields, so
it composes with msgspec tagged unions.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

R = TypeVar("R")


class Request(msgspec.Struct, Generic[R], frozen=True):
    """A message whose handler's return value is the reply, of type ``R``."""
