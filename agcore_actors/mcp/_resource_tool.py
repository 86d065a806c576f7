"""A server's resources as one tool the model can call: ``{server}-read_resource``.

Offered when the server's entry sets ``resources_tool`` and the server has resources.
Its one argument, ``uri``, is one of the listed resources' URIs (an ``enum`` of them
when there are at most :data:`MAX_LISTED`; else any string, the first
:data:`MAX_LISTED` named in the description). A call reads the resource through the
connection actor: the text parts joined, a binary part shown as one line naming its
type and size (never its bytes). A URI the server does not know is the recoverable
:class:`~agcore_actors.tools.ExecutionFailed` with the server's message (secrets
redacted).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import attrs

from ..actor import ActorError, ActorRef
from ..tools import ExecutionFailed, InvalidArguments, ToolContext
from ._errors import McpConnectionClosed, McpServerError
from ._policy import redact
from ._resources import McpResource, McpResourceContent
from .messages import McpConnectionMsg, McpResourceRead, ReadResource

__all__ = ["MAX_LISTED", "TOOL_NAME", "McpResourceTool", "resource_tool"]

#: The resources named in the tool's schema and description at most.
MAX_LISTED = 50
#: The tool's name after the server's prefix.
TOOL_NAME = "read_resource"


def _part(part: McpResourceContent) -> str:
    if part.text is not None:
        return part.text
    try:
        size = len(base64.b64decode(part.blob or "", validate=True))
    except (binascii.Error, ValueError):
        size = 0
    return f"[binary content: {part.mime_type or 'unknown type'}, {size} bytes]"


@attrs.frozen
class McpResourceTool:
    """The ``read_resource`` tool of one server (see the module docstring)."""

    name: str
    server: str
    description: str
    parameters: dict[str, Any]
    connection: ActorRef[McpConnectionMsg]
    required_permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout: float | None = None
    secrets: tuple[str, ...] = ()

    async def call(self, args: Any, ctx: ToolContext) -> str:
        uri = args.get("uri") if isinstance(args, dict) else None
        if not isinstance(uri, str) or not uri:
            raise InvalidArguments(self.name, "'uri' must be a resource's URI")
        try:
            read: McpResourceRead = await self.connection.ask(ReadResource(uri))
        except ActorError as exc:
            raise McpConnectionClosed(self.server, str(exc)) from exc
        except McpServerError as exc:  # an unknown URI, say: the model can pick another
            raise ExecutionFailed(self.name, redact(str(exc), self.secrets)) from None
        return redact("\n".join(_part(part) for part in read.contents), self.secrets)


def resource_tool(
    name: str,
    server: str,
    resources: list[McpResource],
    connection: ActorRef[McpConnectionMsg],
    secrets: tuple[str, ...] = (),
) -> McpResourceTool:
    """The tool for ``resources`` of ``server``, registered as ``name``."""
    listed = resources[:MAX_LISTED]
    lines = [
        f"- {r.uri}: {r.title or r.name}" + (f" ({r.description})" if r.description else "")
        for r in listed
    ]
    more = f"\n(and {len(resources) - len(listed)} more)" if len(resources) > len(listed) else ""
    description = f"Read a resource of the MCP server {server!r} by its URI."
    if lines:
        description += " Resources:\n" + "\n".join(lines) + more
    uri: dict[str, Any] = {"type": "string", "description": "The resource's URI."}
    if resources and len(resources) <= MAX_LISTED:
        uri["enum"] = [r.uri for r in resources]
    parameters = {"type": "object", "properties": {"uri": uri}, "required": ["uri"]}
    return McpResourceTool(
        name=name,
        server=server,
        description=redact(description, secrets),
        parameters=parameters,
        connection=connection,
        secrets=secrets,
    )
