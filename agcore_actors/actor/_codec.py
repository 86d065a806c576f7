"""Strict message mode: round-trip every message through msgspec msgpack.

With ``ActorSystem(strict=True)`` every message, reply and stream event is
encoded and decoded back before delivery. The receiver therefore gets a
private copy (nothing shared-mutable crosses an actor boundary) that has been
validated against its declared type, and anything that could not cross a
process or network boundary is refused at the sender.

Messages decode into their own class. Replies decode into the ``R`` their
request declares (``Request[R]``) and stream events into the ``E`` of
``StreamRequest[E]``, so a ``list[SomeStruct]`` reply arrives as structs and
a reply of the wrong type is caught; where the declaration is missing or
``Any``, the value's own type is used.
"""

from __future__ import annotations

import math
import typing
from typing import Any

import msgspec

from ._errors import UnencodableMessage

_encoder = msgspec.msgpack.Encoder()
_decoders: dict[Any, msgspec.msgpack.Decoder[Any]] = {}
_declared: dict[tuple[type, type], Any] = {}


def _decoder_for(tp: Any) -> msgspec.msgpack.Decoder[Any]:
    decoder = _decoders.get(tp)
    if decoder is None:
        decoder = _decoders[tp] = msgspec.msgpack.Decoder(tp)
    return decoder


def declared_type(msg_type: type, base: type) -> Any:
    """The type argument ``msg_type`` gives ``base`` (``Request`` or
    ``StreamRequest``), or None if it gives none (or ``Any``)."""
    key = (msg_type, base)
    if key in _declared:
        return _declared[key]
    found: Any = None
    for klass in msg_type.__mro__:
        for orig in klass.__dict__.get("__orig_bases__", ()):
            if typing.get_origin(orig) is base:
                args = typing.get_args(orig)
                if args and not isinstance(args[0], typing.TypeVar) and args[0] is not Any:
                    found = args[0]
                break
        else:
            continue
        break
    _declared[key] = found
    return found


def same_value(copy: Any, original: Any) -> bool:
    """Whether a decoded ``copy`` carries the same value as ``original``.

    Like ``==``, except that a NaN equals a NaN and msgspec Structs compare
    field by field even when they declare ``eq=False``: both are values that
    survive a round trip although ``copy == original`` is False. Types must
    match exactly, so an object that came back as a dict still differs.
    """
    if type(copy) is not type(original):
        return False
    if isinstance(original, float):
        return copy == original or (math.isnan(copy) and math.isnan(original))
    if isinstance(original, msgspec.Struct):
        return all(
            same_value(getattr(copy, field), getattr(original, field))
            for field in original.__struct_fields__
        )
    if isinstance(original, list | tuple):
        return len(copy) == len(original) and all(map(same_value, copy, original))
    if isinstance(original, dict):
        return copy.keys() == original.keys() and all(
            same_value(copy[key], value) for key, value in original.items()
        )
    return bool(copy == original)


def roundtrip(obj: Any, actor: str, declared: Any = None) -> Any:
    """Return a validated copy of ``obj`` or raise :class:`UnencodableMessage`.

    ``declared`` is the type to decode into; by default ``obj``'s own type.
    """
    if declared is None:
        if obj is None:
            return None
        declared = type(obj)
    try:
        data = _encoder.encode(obj)
        copy = _decoder_for(declared).decode(data)
        # msgspec encodes attrs classes and dataclasses field by field, so an
        # object in an untyped field (a channel, a lock) would arrive as a
        # plain dict. Comparing the copy with the original catches that, and
        # any other lossy conversion; see same_value for NaN and eq=False.
        unchanged = bool(copy == obj) or same_value(copy, obj)
    except Exception as exc:
        # Not only encode errors: building a decoder for an arbitrary class
        # can fail (unresolvable annotations), and so can a field's __eq__;
        # a value of the wrong type fails validation.
        raise UnencodableMessage(actor, obj, exc) from exc
    if not unchanged:
        raise UnencodableMessage(
            actor, obj, ValueError("it does not survive a msgpack round trip unchanged")
        )
    return copy
