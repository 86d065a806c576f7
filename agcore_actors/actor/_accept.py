"""What an actor accepts: the runtime message types behind ``Actor[M]``.

An actor class declares its message type as the type argument of its base
(``class Counter(Actor[Add | Get])``). :func:`message_types` turns that
declaration into a tuple of classes once per actor class, and
:func:`accepted` splits it by kind of send, so that a send checks a message
with one ``isinstance`` against a cached tuple (an ``ask`` checks "accepted
and not a stream request" in that one call). Where the declaration has no
runtime form (``Any``, a type variable, ``Literal``, a string forward
reference), the result is None and only the kind of request is checked.
"""

from __future__ import annotations

import types
import typing
import weakref
from typing import Any

from ._actor import Actor
from ._message import StreamRequest

_cache: weakref.WeakKeyDictionary[type, tuple[type, ...] | None] = weakref.WeakKeyDictionary()
_accepted: weakref.WeakKeyDictionary[type, Accepted | None] = weakref.WeakKeyDictionary()


class Accepted:
    """The classes a message must be an instance of, by kind of send (shared per actor class).

    ``all`` is for ``tell``; ``asks`` and ``streams`` are the classes for
    which ``ask`` and ``stream`` are right. When the declaration names a base
    of :class:`StreamRequest` (``msgspec.Struct``, ``object``), the split is
    impossible: ``asks`` and ``streams`` are then empty and every ask or
    stream takes the slow path, which checks ``all`` and the request's kind.
    """

    __slots__ = ("all", "asks", "streams")

    def __init__(self, classes: tuple[type, ...]) -> None:
        self.all = classes
        if any(issubclass(StreamRequest, t) for t in classes):
            self.asks: tuple[type, ...] = ()
            self.streams: tuple[type, ...] = ()
        else:
            self.asks = tuple(t for t in classes if not issubclass(t, StreamRequest))
            self.streams = tuple(t for t in classes if issubclass(t, StreamRequest))


def accepted(actor_class: type[Actor[Any]]) -> Accepted | None:
    """:func:`message_types` of ``actor_class``, split by kind of send; cached."""
    try:
        return _accepted[actor_class]
    except KeyError:
        pass
    classes = message_types(actor_class)
    found = None if classes is None else Accepted(classes)
    _accepted[actor_class] = found
    return found


def message_types(actor_class: type[Actor[Any]]) -> tuple[type, ...] | None:
    """The classes a message to an actor of ``actor_class`` must be an instance of.

    None when the declared message type has no runtime check (see the module
    docstring). Cached per class.
    """
    try:
        return _cache[actor_class]
    except KeyError:
        pass
    declared = declared_message_type(actor_class)
    found = None if declared is None else runtime_types(declared)
    _cache[actor_class] = found
    return found


def declared_message_type(actor_class: type) -> Any:
    """The ``M`` of ``Actor[M]`` as ``actor_class`` binds it, or None if unbound.

    Follows generic intermediate classes: with ``class Base(Actor[M])`` and
    ``class Concrete(Base[Msg])``, the answer for ``Concrete`` is ``Msg``.
    """
    bound: dict[Any, Any] = {}
    for klass in actor_class.__mro__:
        for base in klass.__dict__.get("__orig_bases__", ()):
            origin = typing.get_origin(base)
            if origin is None:
                continue
            args = tuple(bound.get(a, a) for a in typing.get_args(base))
            if origin is Actor:
                return args[0] if args else None
            for parameter, arg in zip(getattr(origin, "__parameters__", ()), args, strict=False):
                bound.setdefault(parameter, arg)
    return None


def runtime_types(tp: Any) -> tuple[type, ...] | None:
    """The classes ``isinstance`` needs to check a value against ``tp``, or None."""
    if tp is None or tp is type(None):
        return (type(None),)
    origin = typing.get_origin(tp)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        found: list[type] = []
        for member in typing.get_args(tp):
            inner = runtime_types(member)
            if inner is None:
                return None
            found.extend(t for t in inner if t not in found)
        return tuple(found)
    if origin is typing.Annotated:
        return runtime_types(typing.get_args(tp)[0])
    if isinstance(origin, type):  # a parametrised generic: list[int], Request[int]
        return _checked((origin,))
    if isinstance(tp, type) and tp is not typing.Any:
        return _checked((tp,))
    return None  # Any, a TypeVar, Literal, a forward reference, a NewType...


def _checked(classes: tuple[type, ...]) -> tuple[type, ...] | None:
    try:
        isinstance(None, classes)
    except TypeError:  # e.g. a Protocol that is not runtime_checkable
        return None
    return classes
