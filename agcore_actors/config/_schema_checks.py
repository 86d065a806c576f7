"""Validators and conversions shared by the configuration's tables (see :mod:`._schema`).

A message names the key and never shows a secret's value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from .._validators import at_least_one, non_negative

__all__ = [
    "catalog_model",
    "http_url",
    "limit",
    "optional_at_least_one",
    "optional_non_negative",
    "optional_postgres_url",
    "printable_key",
    "sendable_headers",
    "unit_interval",
]


def limit(seconds: float | None) -> float:
    """The file's ``inf`` for the library's None (no limit)."""
    return math.inf if seconds is None else seconds


def printable_key(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """Printable ASCII without whitespace, or empty; the message never shows the value."""
    if value and (
        not value.isascii() or not value.isprintable() or any(c.isspace() for c in value)
    ):
        raise ValueError(f"{attribute.name} must be printable ASCII without whitespace")


def sendable_headers(_: object, attribute: attrs.Attribute[Any], value: Mapping[str, str]) -> None:
    """Names and values that can be sent; the message never shows a value."""
    for name, text in value.items():
        name_ok = bool(name) and all(33 <= ord(c) <= 126 and c != ":" for c in name)
        if not name_ok or not all(32 <= ord(c) <= 126 or c == "\t" for c in text):
            raise ValueError(
                f"{attribute.name} must be HTTP header names with printable ASCII values"
            )


def http_url(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("http", "https") or not rest.strip("/"):
        raise ValueError(f"{attribute.name} must be an http(s) URL, not {value!r}")


def optional_at_least_one(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        at_least_one(instance, attribute, value)  # type: ignore[arg-type]


def optional_non_negative(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        non_negative(instance, attribute, value)  # type: ignore[arg-type]


def unit_interval(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be between 0 and 1, not {value!r}")


def catalog_model(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    from ..local import CatalogModel

    try:
        CatalogModel(name=value)
    except ValueError:
        raise ValueError(
            f"{attribute.name} must be 'default' (1.5B), 'small' (0.5B) or a catalog name,"
            f" not {value!r}"
        ) from None


def optional_postgres_url(_: object, __: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not value.startswith(("postgresql://", "postgres://")):
        raise ValueError("expected a postgresql:// URL")
