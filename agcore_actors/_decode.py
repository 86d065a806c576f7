"""What msgspec's JSON decoders raise on hostile input, as one tuple to catch.

Besides :class:`msgspec.DecodeError` (bad syntax, wrong types, numbers out of range),
``msgspec.json.decode`` raises :class:`RecursionError` on nesting deeper than the
interpreter's stack (``[[[[...]]]]`` in a field typed ``Any``) and
:class:`UnicodeDecodeError` on invalid UTF-8 inside a string. Every place that decodes
bytes it did not write catches all three and raises its package's typed error.
"""

from __future__ import annotations

import msgspec

__all__ = ["DECODE_ERRORS"]

#: Catch these around ``msgspec.json.decode`` of untrusted bytes.
DECODE_ERRORS: tuple[type[Exception], ...] = (
    msgspec.DecodeError,
    RecursionError,
    UnicodeDecodeError,
)
