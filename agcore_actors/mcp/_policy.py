"""Pure MCP policy: the registry names of a server's tools (valid for every model
API), and keeping configured secrets out of results, errors and logs.

No event loop, no I/O.
"""

from __future__ import annotations

import collections
import hashlib
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ._config import HttpServer, StdioServer

#: What joins a server's name and its tool's name in the registry.
DEFAULT_SEPARATOR = "-"


#: Tool names every model API accepts (OpenAI's rule, the strictest).
TOOL_NAME_PATTERN = re.compile(r"\A[a-zA-Z0-9_-]{1,64}\Z")
_MAX_NAME = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def prefixed_name(server: str, tool: str, separator: str = DEFAULT_SEPARATOR) -> str:
    """``{server}{separator}{tool}``: an MCP tool's registry name before sanitising."""
    return f"{server}{separator}{tool}"


def registry_names(
    server: str, tools: Sequence[str], separator: str = DEFAULT_SEPARATOR
) -> list[str]:
    """The registry names of ``server``'s tools, in order, each matching
    :data:`TOOL_NAME_PATTERN`.

    :func:`prefixed_name` when it matches; else every other character becomes ``_``,
    and a name that is then longer than 64 characters, or shared by two tools, is cut
    to 55 characters plus ``_`` and 8 hex digits of a hash of the tool's own name.
    Distinct tool names always get distinct registry names; the caller keeps the
    mapping back to the server's names.
    """
    plain = [_INVALID.sub("_", prefixed_name(server, tool, separator)) for tool in tools]
    counts = collections.Counter(plain)
    names: list[str] = []
    taken: set[str] = set()
    for tool, name in zip(tools, plain, strict=True):
        salt = ""
        if len(name) > _MAX_NAME or counts[name] > 1:
            name = _hashed(name, tool)
        while name in taken:  # only a name that was already unique by itself
            salt += "#"
            name = _hashed(name, tool + salt)
        taken.add(name)
        names.append(name)
    return names


def _hashed(name: str, tool: str) -> str:
    digest = hashlib.sha256(tool.encode("utf-8")).hexdigest()[:8]
    return f"{name[: _MAX_NAME - 9]}_{digest}"


#: Configured values shorter than this are not treated as secrets: redacting "1" or
#: "UTC" would garble every message and hides nothing.
MIN_SECRET_LENGTH = 6

REDACTED = "[redacted]"


def secret_values(server: StdioServer | HttpServer) -> tuple[str, ...]:
    """The configured values of ``server`` that must never appear in an error.

    HTTP: every header value, and the credential after its scheme (``Bearer xyz`` ->
    ``xyz``, since servers echo either), a password in the URL, an OAuth client secret
    or private key. Stdio: every value of ``env`` (not the inherited variables). Longest
    first, so a value is replaced before any part of it.
    """
    found: set[str] = set()
    if isinstance(server, HttpServer):
        for value in server.headers.values():
            found.add(value.strip())
            _scheme, _, credential = value.strip().partition(" ")
            if credential:
                found.add(credential.strip())
        password = urllib.parse.urlsplit(server.url).password
        if password:
            found.update({password, urllib.parse.unquote(password)})
        if server.oauth is not None:
            found.update(v for v in (server.oauth.client_secret, server.oauth.private_key) if v)
    else:
        found.update(value.strip() for value in server.env.values())
    kept = (v for v in found if len(v) >= MIN_SECRET_LENGTH)
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every occurrence of each of ``secrets`` replaced by ``[redacted]``."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: Sequence[str]) -> Any:
    """A JSON value with :func:`redact` applied to every string in it, keys included."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [redact_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {redact_value(k, secrets): redact_value(v, secrets) for k, v in value.items()}
    return value


def needs_approval(annotations: Mapping[str, Any] | None, override: bool | None) -> bool:
    """Whether a tool must be approved before it runs: ``override`` when the server's
    entry sets ``require_approval``; else true for a tool the server marks
    ``destructiveHint: true`` (and not ``readOnlyHint: true``). A tool without
    annotations is not taken as destructive (the spec's default applies to hints that
    are present, and most servers list none)."""
    if override is not None:
        return override
    if not annotations:
        return False
    return (
        annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True
    )
