"""Pure MCP policy: the registry names of a server's tools.

No event loop, no I/O.
"""

from __future__ import annotations

#: What joins a server's name and its tool's name in the registry.
DEFAULT_SEPARATOR = "-"


def prefixed_name(server: str, tool: str, separator: str = DEFAULT_SEPARATOR) -> str:
    """The registry name of an MCP tool: ``{server}{separator}{tool}``."""
    return f"{server}{separator}{tool}"
