"""MCP tools in a :class:`~agcore_actors.tools.ToolRegistry`.

Each tool a server lists becomes an :class:`McpToolAdapter` registered under its
prefixed name; calling it asks the server's :class:`~agcore_actors.mcp.McpConnection`.
A server's adapters form one registry group, swapped as a whole when the server lists
its tools again, so the registry never holds a mix of two listings.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from ..actor import ActorError, ActorRef
from ..llm import TextPart
from ..tools import ExecutionFailed, InvalidArguments, ToolContext, ToolRegistry
from ._content import has_media, mcp_parts
from ._errors import McpConnectionClosed, McpOutputInvalid
from ._policy import needs_approval, redact, redact_value, registry_names
from ._resource_tool import TOOL_NAME, McpResourceTool, resource_tool
from ._resources import McpResource
from ._schema import violation
from .messages import CallTool, McpConnectionMsg, McpToolInfo

log = logging.getLogger("agcore_actors.mcp")


@attrs.frozen
class McpToolAdapter:
    """An MCP tool in a :class:`~agcore_actors.tools.ToolRegistry`; calls go through the
    connection actor.

    ``name`` is the registry name, ``remote_name`` the server's own name for the tool
    (the exact reverse mapping). A result of a tool with an ``outputSchema`` whose
    ``structuredContent`` is missing or does not match it is
    :class:`~agcore_actors.mcp.McpOutputInvalid` (recoverable: the model is told where it
    breaks the schema). A tool result with ``isError`` is an
    :class:`~agcore_actors.tools.ExecutionFailed` carrying the tool's text, with the
    server's configured header and env values redacted; a connection
    that stops or crashes mid-call is :class:`~agcore_actors.mcp.McpConnectionClosed`.
    A result with images, audio or resources is a list of content parts (see
    :mod:`~._content`), which the executor makes the result's ``parts``.
    """

    name: str
    remote_name: str
    server: str
    description: str
    parameters: dict[str, Any]
    connection: ActorRef[McpConnectionMsg]
    required_permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout: float | None = None
    #: Configured header and env values of the server, redacted from results and errors.
    secrets: tuple[str, ...] = ()
    #: The tool's ``outputSchema``: a result's ``structuredContent`` must match it.
    output_schema: dict[str, Any] | None = None

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidArguments(self.name, "MCP tool arguments must be a JSON object")
        try:
            call = CallTool(
                name=self.remote_name,
                arguments=args,
                session_id=ctx.session_id,
                call_id=ctx.call_id,
            )
            result = await self.connection.ask(call)
        except ActorError as exc:  # stopped or crashed mid-call: the server went away
            raise McpConnectionClosed(self.server, str(exc)) from exc
        if result.is_error:
            text = redact(result.text, self.secrets) or "the MCP tool reported an error"
            raise ExecutionFailed(self.name, text)
        if self.output_schema is not None:
            if result.structured is None:
                raise McpOutputInvalid(self.server, self.remote_name, "no structuredContent")
            broken = violation(self.output_schema, result.structured)
            if broken is not None:
                raise McpOutputInvalid(self.server, self.remote_name, broken)
        if has_media(result.content):
            # Images, audio and resources as content parts (see _content), not dropped.
            return [
                TextPart(redact(p.text, self.secrets)) if isinstance(p, TextPart) else p
                for p in mcp_parts(result.content)
            ]
        if result.text or result.structured is None:
            return redact(result.text, self.secrets)
        return redact_value(result.structured, self.secrets)


def registry_group(server: str) -> str:
    """The registry group that holds ``server``'s tools."""
    return f"mcp:{server}"


def publish_tools(
    registry: ToolRegistry,
    server: str,
    tools: list[McpToolInfo],
    connection: ActorRef[McpConnectionMsg],
    separator: str,
    secrets: tuple[str, ...] = (),
    require_approval: bool | None = None,
    *,
    resources: list[McpResource] | None = None,
) -> None:
    """Replace ``server``'s tools in ``registry`` with adapters for ``tools``, under
    the names of :func:`~agcore_actors.mcp.policy.registry_names`; a tool requires
    approval as :func:`~agcore_actors.mcp.policy.needs_approval` says. With
    ``resources`` (not None), the group also holds the server's ``read_resource`` tool
    (:mod:`._resource_tool`), unless the server has a tool of that name.

    A name taken by a tool outside the server's group is skipped with a warning.
    """
    remote = [t.name for t in tools]
    reading = resources is not None and TOOL_NAME not in remote
    names = registry_names(server, remote + [TOOL_NAME] * reading, separator)
    adapters: list[McpToolAdapter | McpResourceTool] = [
        McpToolAdapter(
            name=name,
            remote_name=t.name,
            server=server,
            description=t.description,
            parameters=t.input_schema,
            connection=connection,
            requires_approval=needs_approval(t.annotations, require_approval),
            secrets=secrets,
            output_schema=t.output_schema,
        )
        for name, t in zip(names, tools, strict=False)
    ]
    if reading:
        assert resources is not None
        adapters.append(resource_tool(names[-1], server, resources, connection, secrets))
    for name in registry.replace_group(registry_group(server), adapters):
        log.warning("MCP server %r: tool name %r is taken; not registered", server, name)
