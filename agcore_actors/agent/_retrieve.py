"""The ``retrieve`` tool: the model searches the knowledge pages of a MemoryStore itself.

:func:`retrieve_tool` wraps the memory layer's definition and runner into a tool for the
ToolExecutor (``AgentBuilder.knowledge(memory_ref)`` registers it). Bad arguments are an
``InvalidInput`` memory error: the model is shown it as the tool's result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..actor import ActorRef
from ..memory import RETRIEVE_TOOL, run_retrieve_tool
from ..memory import messages as mm
from ..tools import ToolContext

__all__ = ["RetrieveTool", "retrieve_tool"]


@attrs.frozen
class RetrieveTool:
    """A :class:`~agcore_actors.tools.Tool` named ``retrieve`` over a MemoryStore."""

    memory: ActorRef[mm.MemoryMsg]
    #: Seconds the store gets to answer one search.
    search_timeout: float = 10.0
    name: str = RETRIEVE_TOOL["name"]
    description: str = RETRIEVE_TOOL["description"]
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: dict(RETRIEVE_TOOL["parameters"]))
    required_permissions: Sequence[str] = ()
    requires_approval: bool = False
    timeout: float | None = None

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        return await run_retrieve_tool(self.memory, args, timeout=self.search_timeout)


def retrieve_tool(memory: ActorRef[mm.MemoryMsg], *, search_timeout: float = 10.0) -> RetrieveTool:
    """The ``retrieve`` tool over the MemoryStore ``memory``."""
    return RetrieveTool(memory, search_timeout)
