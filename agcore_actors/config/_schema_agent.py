"""Parts of ``[agents.NAME]``: the ``prices`` table and the validators of its
enumerated keys (imports nothing of the config package)."""

from __future__ import annotations

from typing import Any

import attrs

from .._validators import non_negative

__all__ = ["EFFORTS", "FALLBACK_KINDS", "PriceSettings", "one_of"]


@attrs.frozen(kw_only=True)
class PriceSettings:
    """A model's price per million tokens (``[agents.NAME.prices."MODEL"]``)."""

    input: float = attrs.field(default=0.0, validator=non_negative)
    output: float = attrs.field(default=0.0, validator=non_negative)
    cache_read: float = attrs.field(default=0.0, validator=non_negative)
    cache_write: float = attrs.field(default=0.0, validator=non_negative)


EFFORTS = ("minimal", "low", "medium", "high")
FALLBACK_KINDS = ("rate_limit", "server_error", "timeout", "context_length", "connection")


def one_of(choices: tuple[str, ...]) -> Any:
    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        values = value if isinstance(value, tuple) else (value,)
        for one in values:
            if one is not None and one not in choices:
                raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}")

    return check
