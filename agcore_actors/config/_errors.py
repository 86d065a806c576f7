"""The configuration's one error: :class:`ConfigError`."""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError

__all__ = ["ConfigError"]


class ConfigError(AgcoreError, ValueError):
    """The configuration is wrong: one line naming where, which key, and what was expected.

    ``str(error)`` is ``"<source>: <key path>: <problem>"``, for example
    ``agcore.toml: agents.helper.max_turns: expected int, got str "ten"``; ``source`` is
    the file (or the environment variable) the bad value came from, ``path`` the dotted
    key path (``""`` for the file as a whole). Values of secret keys (API keys, MCP
    ``env`` values, headers) are never shown.
    """

    kind: ClassVar[str] = "config"

    def __init__(self, source: str, path: str, problem: str) -> None:
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.path = path
        self.problem = problem
