"""The connection actor's answers to the requests about a server's resources and prompts
(``ListResources``, ``ReadResource``, ``SubscribeResource``, ``ListPrompts``,
``GetPrompt``): one request on
the connected client each, its typed errors passed to the asker as they are; and the
resources its ``read_resource`` tool offers (:func:`tool_resources`)."""

from __future__ import annotations

import logging
from typing import assert_never

from ._client import McpClient
from ._config import ServerConfig
from ._errors import McpError
from ._resources import McpResource
from .messages import (
    GetPrompt,
    ListPrompts,
    ListResources,
    McpPromptList,
    McpPromptRendered,
    McpResourceList,
    McpResourceRead,
    McpSubscription,
    ReadResource,
    SubscribeResource,
)

__all__ = ["ContentReply", "ContentRequest", "answer_content", "tool_resources"]

log = logging.getLogger("agcore_actors.mcp")

ContentRequest = ListResources | ReadResource | SubscribeResource | ListPrompts | GetPrompt
ContentReply = (
    McpResourceList | McpResourceRead | McpSubscription | McpPromptList | McpPromptRendered
)


async def answer_content(server: str, client: McpClient, msg: ContentRequest) -> ContentReply:
    """The answer to ``msg`` from ``server``'s ``client``."""
    match msg:
        case ListResources():
            return McpResourceList(server, await client.list_resources())
        case ReadResource(uri=uri):
            contents = await client.read_resource(uri)
            return McpResourceRead(server=server, uri=uri, contents=contents)
        case SubscribeResource(uri=uri, subscribe=subscribe):
            if subscribe:
                await client.subscribe_resource(uri)
            else:
                await client.unsubscribe_resource(uri)
            return McpSubscription(server=server, uri=uri, subscribed=subscribe)
        case ListPrompts():
            return McpPromptList(server, await client.list_prompts())
        case GetPrompt(name=name, arguments=arguments):
            messages = await client.get_prompt(name, arguments)
            return McpPromptRendered(server=server, name=name, messages=messages)
        case _:
            assert_never(msg)


async def tool_resources(
    server: str, config: ServerConfig, client: McpClient
) -> list[McpResource] | None:
    """What the ``read_resource`` tool offers: None unless the server's entry asks for
    the tool and the server has resources (a listing that fails offers the tool without
    a list)."""
    if not config.resources_tool or "resources" not in client.capabilities:
        return None
    try:
        return await client.list_resources()
    except McpError as exc:
        log.warning("MCP server %r: listing resources failed: %s", server, exc)
        return []
