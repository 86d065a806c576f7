"""attrs validators shared by every configuration class (imports nothing of ours).

Each raises ``ValueError`` naming the field and the value, so a bad configuration fails
where it is built, with one clear line.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["non_empty", "non_negative", "optional_positive", "positive", "seconds_or_inf"]


def positive(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    """``value > 0`` (NaN fails)."""
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, not {value!r}")


def non_negative(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    """``value >= 0`` (NaN fails)."""
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be >= 0, not {value!r}")


def optional_positive(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """None (no limit) or a number of seconds > 0."""
    if value is not None and not (
        isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    ):
        raise ValueError(f"{attribute.name} must be > 0 seconds or None, not {value!r}")


def seconds_or_inf(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    """A duration ``>= 0``, ``math.inf`` allowed (wait for ever); NaN and -inf fail."""
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be >= 0 seconds, not {value!r}")


def non_empty(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string, not {value!r}")
