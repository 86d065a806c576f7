"""The McpConnection actor's protocol, and the MCP data it hands out.

::

    CallTool(name, arguments, timeout) -> McpToolResult
    ListTools(refresh)                 -> McpToolList
    PingServer()                       -> McpStatus      (after a round trip)
    GetStatus()                        -> McpStatus      (without talking to the server)
    ListResources()                    -> McpResourceList
    ReadResource(uri)                  -> McpResourceRead
    SubscribeResource(uri, subscribe)  -> McpSubscription
    ListPrompts()                      -> McpPromptList
    GetPrompt(name, arguments)         -> McpPromptRendered

Cancelling the asker:

- ``CallTool``: the request is withdrawn: ``notifications/cancelled`` goes to the server
  and a late answer is dropped; the connection stays up.
- ``ListTools``: withdrawn the same way; the cached list and the registry keep what they
  had.
- ``PingServer``: withdrawn the same way.
- ``GetStatus``: nothing to withdraw (no I/O).
- ``ListResources``, ``ReadResource``, ``ListPrompts``, ``GetPrompt``,
  ``SubscribeResource``: withdrawn as ``CallTool`` is.

A subscription lasts as long as the server's session: the server's
``notifications/resources/updated`` for the URI go to the event sink as
:class:`McpEvent`; after the connection restarts (its status goes back to
``connected``) the subscriber subscribes again.

Errors are :class:`~agcore_actors.mcp.McpError`\\s, given to the asker only: a tool that
reports a failure is ``McpToolResult(is_error=True)``, not an error; a server parked by
its circuit breaker answers :class:`~agcore_actors.mcp.McpUnavailable`; a connection
that is lost or restarting answers :class:`~agcore_actors.mcp.McpConnectionClosed`.
Server notifications are told to the connection's event sink as :class:`McpEvent`.
Import qualified: ``from agcore_actors.mcp import messages as mm``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .._exports import publish
from ..actor import Request
from ._resources import McpPrompt, McpPromptMessage, McpResource, McpResourceContent

__all__ = [
    "CallTool",
    "ConnectionState",
    "GetPrompt",
    "GetStatus",
    "ListPrompts",
    "ListResources",
    "ListTools",
    "McpConnectionMsg",
    "McpConnectionReply",
    "McpEvent",
    "McpPromptList",
    "McpPromptRendered",
    "McpResourceList",
    "McpResourceRead",
    "McpStatus",
    "McpSubscription",
    "McpToolInfo",
    "McpToolList",
    "McpToolResult",
    "PingServer",
    "ReadResource",
    "SubscribeResource",
]

#: ``connecting`` until the first connect of an incarnation succeeds, ``connected``
#: while the server is up, ``parked`` while the circuit breaker keeps it down.
ConnectionState = Literal["connecting", "connected", "parked"]


def _empty_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


class McpToolInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One tool as the server lists it (``name`` is the server's own name for it)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=_empty_schema)
    #: A human-readable name.
    title: str | None = None
    #: The server's hints (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
    #: ``openWorldHint``, ...), as listed; untrusted unless the server is.
    annotations: dict[str, Any] | None = None
    #: The JSON Schema of the tool's ``structuredContent``.
    output_schema: dict[str, Any] | None = None


class McpToolList(msgspec.Struct, frozen=True):
    """The tools of ``server``, in the server's order."""

    server: str
    tools: list[McpToolInfo]


class McpToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """A ``tools/call`` answer: ``text`` joins the text parts of ``content``."""

    text: str
    content: list[dict[str, Any]] = msgspec.field(default_factory=list)
    structured: Any = None
    is_error: bool = False


class McpStatus(msgspec.Struct, frozen=True, kw_only=True):
    """Where a connection stands; ``retry_in`` is the seconds to the breaker's next probe."""

    server: str
    state: ConnectionState
    protocol_version: str | None = None
    server_name: str | None = None
    tools: int = 0
    failures: int = 0
    retry_in: float | None = None


class McpResourceList(msgspec.Struct, frozen=True):
    """The resources of ``server`` (every page), in the server's order."""

    server: str
    resources: list[McpResource]


class McpResourceRead(msgspec.Struct, frozen=True, kw_only=True):
    """What reading ``uri`` of ``server`` gave: its parts (text, or base64 ``blob``)."""

    server: str
    uri: str
    contents: list[McpResourceContent]


class McpSubscription(msgspec.Struct, frozen=True, kw_only=True):
    """The server took the (un)subscription of ``uri``."""

    server: str
    uri: str
    subscribed: bool


class McpPromptList(msgspec.Struct, frozen=True):
    """The prompts of ``server`` (every page), in the server's order."""

    server: str
    prompts: list[McpPrompt]


class McpPromptRendered(msgspec.Struct, frozen=True, kw_only=True):
    """The messages of ``server``'s prompt ``name``, filled in with the arguments."""

    server: str
    name: str
    messages: list[McpPromptMessage]


class McpEvent(msgspec.Struct, frozen=True, tag=True, kw_only=True):
    """A server notification (logging, progress, resources/updated, list changes)."""

    server: str
    method: str
    params: Any = None


# -- requests -------------------------------------------------------------------------


class CallTool(Request[McpToolResult], frozen=True, tag=True, kw_only=True):
    """Call the server's tool ``name`` (``timeout``: seconds, None for the default)."""

    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    timeout: float | None = None
    #: The session whose turn makes the call ("" for none): the server's requests while
    #: it runs (elicitation) are that session's (see ``requesting_session``).
    session_id: str = ""
    #: The turn's id of the call (progress events name it).
    call_id: str = ""


class ListTools(Request[McpToolList], frozen=True, tag=True):
    """The server's tools: the cached list, or asked again when ``refresh``."""

    refresh: bool = False


class PingServer(Request[McpStatus], frozen=True, tag=True):
    """A round trip to the server, then its status."""


class GetStatus(Request[McpStatus], frozen=True, tag=True):
    """The connection's status, without talking to the server."""


class ListResources(Request[McpResourceList], frozen=True, tag=True):
    """The server's resources, asked again each time."""


class ReadResource(Request[McpResourceRead], frozen=True, tag=True):
    """Read the server's resource ``uri``."""

    uri: str


class SubscribeResource(Request[McpSubscription], frozen=True, tag=True):
    """Subscribe to the server's resource ``uri`` (``subscribe=False``: unsubscribe)."""

    uri: str
    subscribe: bool = True


class ListPrompts(Request[McpPromptList], frozen=True, tag=True):
    """The server's prompts, asked again each time."""


class GetPrompt(Request[McpPromptRendered], frozen=True, tag=True):
    """The server's prompt ``name`` filled in with ``arguments``."""

    name: str
    arguments: dict[str, str] = msgspec.field(default_factory=dict)


McpConnectionMsg = (
    CallTool
    | ListTools
    | PingServer
    | GetStatus
    | ListResources
    | ReadResource
    | SubscribeResource
    | ListPrompts
    | GetPrompt
)
McpConnectionReply = (
    McpToolResult
    | McpToolList
    | McpStatus
    | McpResourceList
    | McpResourceRead
    | McpSubscription
    | McpPromptList
    | McpPromptRendered
)

publish(__name__, __all__)
