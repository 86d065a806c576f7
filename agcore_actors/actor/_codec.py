"""Strict message mode: round-trip every message through msgspec msgpack.

With ``ActorSystem(strict=True)`` every message and every reply is encoded
and decoded back into its own type before delivery. The receiver therefore
gets a private copy (nothing shared-mutable crosses an actor boundary) that
has been validated against its declared types, and anything that could not
cross a process or network boundary is refused at the sender.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._errors import UnencodableMessage

_encoder = msgspec.msgpack.Encoder()
_decoders: dict[type, msgspec.msgpack.Decoder[Any]] = {}


def _decoder_for(tp: type) -> msgspec.msgpack.Decoder[Any]:
    decoder = _decoders.get(tp)
    if decoder is None:
        decoder = _decoders[tp] = msgspec.msgpack.Decoder(tp)
    return decoder


def roundtrip(obj: Any, actor: str) -> Any:
    """Return a validated copy of ``obj`` or raise :class:`UnencodableMessage`."""
    if obj is None:
        return None
    try:
        data = _encoder.encode(obj)
        copy = _decoder_for(type(obj)).decode(data)
        # msgspec encodes attrs classes and dataclasses field by field, so an
        # object in an untyped field (a channel, a lock) would arrive as a
        # plain dict. Equality catches that, and any other lossy conversion.
        unchanged = bool(copy == obj)
    except Exception as exc:
        # Not only encode errors: building a decoder for an arbitrary class
        # can fail (unresolvable annotations), and so can a field's __eq__.
        raise UnencodableMessage(actor, obj, exc) from exc
    if not unchanged:
        raise UnencodableMessage(
            actor, obj, ValueError("it does not survive a msgpack round trip unchanged")
        )
    return copy
