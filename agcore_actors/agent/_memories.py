"""The ``remember`` and ``recall`` tools over a MemoryStore, for one scope per call.

``AgentBuilder.memories(memory, scope=...)`` registers both. The scope says whose
memories a call reads and writes, and the application decides it, never the model: a
fixed string (``"agent:support"``: one agent's memories across all its sessions) or a
function of the call's :class:`~agcore_actors.tools.ToolContext` (``lambda ctx:
ctx.session_id.partition(":")[0]`` when a bot's session ids start with the user's id).
A scope function that fails, or returns an empty string, fails the call (the model sees
a tool error) and touches nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from ..actor import ActorRef
from ..memory import messages as mm
from ..memory._memory_tools import (
    RECALL_TOOL,
    REMEMBER_TOOL,
    run_recall_tool,
    run_remember_tool,
)
from ..tools import ToolContext

__all__ = ["MemoryScope", "MemoryTool", "memory_tools"]

#: Whose memories a call uses: a fixed scope, or one computed from the call.
MemoryScope = str | Callable[[ToolContext], str]

_Runner = Callable[[ActorRef[mm.MemoryMsg], str, object], Awaitable[str]]


def resolve_scope(scope: MemoryScope, ctx: ToolContext) -> str:
    value = scope(ctx) if callable(scope) else scope
    if not isinstance(value, str) or not value:
        raise ValueError(f"the memory scope of this call is {value!r}, not a non-empty string")
    return value


@attrs.frozen
class MemoryTool:
    """A :class:`~agcore_actors.tools.Tool` (``remember`` or ``recall``) over a MemoryStore."""

    memory: ActorRef[mm.MemoryMsg]
    scope: MemoryScope
    run: _Runner
    name: str
    description: str
    parameters: Mapping[str, Any]
    #: Seconds the store gets to answer.
    store_timeout: float = 10.0
    required_permissions: Sequence[str] = ()
    requires_approval: bool = False
    timeout: float | None = None

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        return await self.run(self.memory, resolve_scope(self.scope, ctx), args)


def memory_tools(
    memory: ActorRef[mm.MemoryMsg], *, scope: MemoryScope, store_timeout: float = 10.0
) -> tuple[MemoryTool, MemoryTool]:
    """``remember`` and ``recall`` over the MemoryStore ``memory``, for ``scope``."""

    async def remember(ref: ActorRef[mm.MemoryMsg], scope: str, args: object) -> str:
        return await run_remember_tool(ref, scope, args, timeout=store_timeout)

    async def recall(ref: ActorRef[mm.MemoryMsg], scope: str, args: object) -> str:
        return await run_recall_tool(ref, scope, args, timeout=store_timeout)

    def make(definition: dict[str, Any], run: _Runner) -> MemoryTool:
        return MemoryTool(
            memory,
            scope,
            run,
            definition["name"],
            definition["description"],
            dict(definition["parameters"]),
            store_timeout,
        )

    return make(REMEMBER_TOOL, remember), make(RECALL_TOOL, recall)
