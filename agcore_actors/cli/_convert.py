"""Typed converters for argparse ``type=``: a bad value is a usage error (exit 2)
before the command runs, with a message that names the value and the rule."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._errors import UsageError

__all__ = [
    "check_http_url",
    "existing_dir",
    "existing_file",
    "http_url",
    "input_file",
    "int_at_least",
    "json_object",
    "key_value",
    "non_negative_float",
    "positive_float",
]

Converter = Callable[[str], Any]


def int_at_least(low: int) -> Converter:
    """An integer >= ``low``."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, not {value}")
        return value

    convert.__name__ = f"int >= {low}"
    return convert


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError("not a number: 'nan'")
    return value


def positive_float(text: str) -> float:
    """A number > 0 (``inf`` allowed: no limit)."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _float(text)
    if value < 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


def http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    check_http_url(text, "")
    return text


def check_http_url(text: str, what: str) -> None:
    """Raise ArgumentTypeError (or :class:`UsageError` when ``what`` names a setting,
    e.g. an environment variable) unless ``text`` is an http(s) URL with a host."""
    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in text
        parts.port  # noqa: B018  (a bad port raises ValueError)
    except ValueError:
        ok = False
    if not ok:
        message = f"not an http(s) URL: {text!r}"
        if what:
            raise UsageError(f"{what}: {message}")
        raise argparse.ArgumentTypeError(message)


def existing_file(text: str) -> Path:
    """A path to something that exists and is not a directory (checked, not opened:
    ``<(command)`` and other pipes are fine)."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"a directory, not a file: {text!r}")
    return path


def input_file(text: str) -> str:
    """``-`` (stdin) or an existing file."""
    if text != "-":
        existing_file(text)
    return text


def existing_dir(text: str) -> Path:
    """A path to an existing directory."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such directory: {text!r}")
    return path


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` with a non-empty key."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key, value


def json_object(text: str) -> dict[str, Any]:
    """A JSON object."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, not {text!r}")
    return value
