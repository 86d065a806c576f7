"""Checks of provider configuration, run where a config is built (no I/O).

A key with a trailing newline or a non-ASCII character, or a header value that
cannot be sent, otherwise fails deep in the HTTP stack: as a connection error that
is retried (and printed with the key in it) or as a crash of the provider actor.
Each check raises :class:`LlmConfigError` naming the field and the problem, never
the value of a key or of a header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from ._errors import LlmConfigError, redact

_SENSITIVE = re.compile(r"auth|key|token|secret|cookie|password", re.IGNORECASE)


def _owner(instance: object) -> str:
    return str(getattr(instance, "name", "") or "config")


def _problem(value: str) -> str | None:
    if value != value.strip():
        return "has leading or trailing whitespace (a newline from a file or an echo?)"
    for position, char in enumerate(value):
        if ord(char) > 126 or ord(char) < 32:
            return f"has a character that cannot go in an HTTP header at position {position}"
    if " " in value:
        return "contains a space"
    return None


def check_api_key(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """An API key is empty or printable ASCII without whitespace."""
    problem = _problem(value) if value else None
    if problem is not None:
        raise LlmConfigError(_owner(instance), f"{attribute.name} {problem}")


def check_base_url(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """A base URL is ``http(s)://host[...]``."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = redact(value, [str(getattr(instance, "api_key", ""))])
        raise LlmConfigError(
            _owner(instance), f"{attribute.name} must be an http(s) URL, not {shown!r}"
        )


def check_headers(
    instance: object, attribute: attrs.Attribute[Any], value: Mapping[str, str]
) -> None:
    """Header names and values can be sent (printable ASCII, no line breaks)."""
    for name, text in value.items():
        if not isinstance(name, str) or not name or _problem(name) is not None:
            raise LlmConfigError(_owner(instance), f"{attribute.name} has a bad header name")
        if not isinstance(text, str) or any(ord(c) > 126 or ord(c) < 32 for c in text):
            raise LlmConfigError(
                _owner(instance), f"{attribute.name}[{name!r}] cannot go in an HTTP header"
            )


def headers_repr(headers: Mapping[str, str]) -> str:
    """``headers`` for a repr: sensitive-looking values (as :func:`secrets_of` finds
    them) shown as ``[redacted]``."""
    shown = {k: "[redacted]" if _SENSITIVE.search(k) else v for k, v in headers.items()}
    return repr(shown)


def secrets_of(api_key: str, headers: Mapping[str, str]) -> tuple[str, ...]:
    """The values an error must never show: the key and sensitive-looking headers."""
    found = [api_key] if api_key else []
    found += [text for name, text in headers.items() if _SENSITIVE.search(name) and text]
    return tuple(found)
