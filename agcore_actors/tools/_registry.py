"""ToolRegistry: the tools a session may call, by unique name.

Mutations (register, unregister, replace_group) run without awaiting, so on
trio they are atomic with respect to every task of the process; a caller
that looked a tool up keeps using that object even if it is unregistered
meanwhile. Listings are in registration order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._errors import DuplicateTool
from ._tool import Tool


class ToolRegistry:
    """The tools a session may call, by unique name, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._groups: dict[str, list[str]] = {}
        self.register_all(tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)})"

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def register(self, tool: Tool) -> None:
        """Add ``tool``; raise :class:`DuplicateTool` (and change nothing) if the name is taken."""
        if not isinstance(tool, Tool):
            raise TypeError(f"{tool!r} does not implement the Tool protocol")
        if tool.name in self._tools:
            raise DuplicateTool(tool.name)
        self._tools[tool.name] = tool

    def register_all(self, tools: Iterable[Tool]) -> None:
        """Register every tool, or none: a duplicate (also within ``tools``) changes nothing."""
        tools = list(tools)
        names = [t.name for t in tools]
        for i, n in enumerate(names):
            if n in self._tools or n in names[:i]:
                raise DuplicateTool(n)
        for tool in tools:
            self.register(tool)

    def unregister(self, name: str) -> Tool | None:
        """Remove and return the tool called ``name`` (None if there is none)."""
        for members in self._groups.values():
            if name in members:
                members.remove(name)
        return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        return list(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """Every tool in the OpenAI ``tools`` format (``{"type": "function", ...}``)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in self._tools.values()
        ]

    def replace_group(self, group: str, tools: Iterable[Tool]) -> list[str]:
        """Swap the tools registered under ``group`` (e.g. one MCP server) for ``tools``.

        A new tool whose name belongs to someone outside the group is skipped;
        the skipped names are returned. Tools the group no longer has are
        unregistered.
        """
        old = set(self._groups.get(group, ()))
        for n in old:
            self._tools.pop(n, None)
        members: list[str] = []
        skipped: list[str] = []
        for tool in tools:
            if tool.name in self._tools or tool.name in members:
                skipped.append(tool.name)
                continue
            self._tools[tool.name] = tool
            members.append(tool.name)
        self._groups[group] = members
        return skipped

    def group(self, group: str) -> list[str]:
        """The names registered under ``group`` by :meth:`replace_group`."""
        return list(self._groups.get(group, ()))
