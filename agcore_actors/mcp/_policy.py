"""Pure MCP policy: the registry names of a server's tools, and keeping configured
secrets out of error messages.

No event loop, no I/O.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

from ._config import HttpServer, StdioServer

#: What joins a server's name and its tool's name in the registry.
DEFAULT_SEPARATOR = "-"


def prefixed_name(server: str, tool: str, separator: str = DEFAULT_SEPARATOR) -> str:
    """The registry name of an MCP tool: ``{server}{separator}{tool}``."""
    return f"{server}{separator}{tool}"


#: Configured values shorter than this are not treated as secrets: redacting "1" or
#: "UTC" would garble every message and hides nothing.
MIN_SECRET_LENGTH = 6

REDACTED = "[redacted]"


def secret_values(server: StdioServer | HttpServer) -> tuple[str, ...]:
    """The configured values of ``server`` that must never appear in an error.

    HTTP: every header value, and the credential after its scheme (``Bearer xyz`` ->
    ``xyz``, since servers echo either), and a password in the URL. Stdio: every value
    of ``env`` (not the inherited variables). Longest first, so a value is replaced
    before any part of it.
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
