"""Resources and prompts of a server, typed: the shapes and their parsing (pure), and
the requests on an :class:`~agcore_actors.mcp.McpClient` (``list_resources``,
``read_resource``, ``list_prompts``, ``get_prompt``), each following ``nextCursor`` up
to :data:`MAX_PAGES` pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ._errors import McpProtocolError

if TYPE_CHECKING:
    from ._client import McpClient

MAX_PAGES = 100


class McpResource(msgspec.Struct, frozen=True, kw_only=True):
    """A resource a server lists."""

    uri: str
    name: str = ""
    title: str | None = None
    description: str = ""
    mime_type: str | None = None


class McpResourceContent(msgspec.Struct, frozen=True, kw_only=True):
    """One part of a read resource: ``text``, or ``blob`` (base64)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


class McpPromptArgument(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str = ""
    required: bool = False


class McpPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt template a server lists."""

    name: str
    title: str | None = None
    description: str = ""
    arguments: list[McpPromptArgument] = []


class McpPromptMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a rendered prompt; ``content`` as the server sent it."""

    role: str
    content: dict[str, Any]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_resource(raw: Any) -> McpResource:
    if not isinstance(raw, dict) or not isinstance(raw.get("uri"), str):
        raise McpProtocolError(f"a resource without a uri: {raw!r}"[:200])
    return McpResource(
        uri=raw["uri"],
        name=_str(raw.get("name")) or "",
        title=_str(raw.get("title")),
        description=_str(raw.get("description")) or "",
        mime_type=_str(raw.get("mimeType")),
    )


def parse_content(raw: Any) -> McpResourceContent:
    if not isinstance(raw, dict) or not isinstance(raw.get("uri"), str):
        raise McpProtocolError(f"resource content without a uri: {raw!r}"[:200])
    return McpResourceContent(
        uri=raw["uri"],
        mime_type=_str(raw.get("mimeType")),
        text=_str(raw.get("text")),
        blob=_str(raw.get("blob")),
    )


def parse_prompt(raw: Any) -> McpPrompt:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise McpProtocolError(f"a prompt without a name: {raw!r}"[:200])
    given = raw.get("arguments")
    arguments: list[Any] = given if isinstance(given, list) else []
    return McpPrompt(
        name=raw["name"],
        title=_str(raw.get("title")),
        description=_str(raw.get("description")) or "",
        arguments=[
            McpPromptArgument(
                name=a["name"],
                description=_str(a.get("description")) or "",
                required=a.get("required") is True,
            )
            for a in arguments
            if isinstance(a, dict) and isinstance(a.get("name"), str)
        ],
    )


async def _pages(client: McpClient, method: str, key: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        raw = await client.request(method, {"cursor": cursor} if cursor else None)
        if not isinstance(raw, dict) or not isinstance(raw.get(key), list):
            raise McpProtocolError(f"{method} answer has no '{key}' array")
        items.extend(raw[key])
        cursor = _str(raw.get("nextCursor")) or None
        if cursor is None or cursor in seen:
            break
        seen.add(cursor)
    return items


async def list_resources(client: McpClient) -> list[McpResource]:
    return [parse_resource(r) for r in await _pages(client, "resources/list", "resources")]


async def read_resource(client: McpClient, uri: str) -> list[McpResourceContent]:
    raw = await client.request("resources/read", {"uri": uri})
    if not isinstance(raw, dict) or not isinstance(raw.get("contents"), list):
        raise McpProtocolError("resources/read answer has no 'contents' array")
    return [parse_content(c) for c in raw["contents"]]


async def list_prompts(client: McpClient) -> list[McpPrompt]:
    return [parse_prompt(p) for p in await _pages(client, "prompts/list", "prompts")]


async def get_prompt(
    client: McpClient, name: str, arguments: dict[str, str] | None = None
) -> list[McpPromptMessage]:
    raw = await client.request("prompts/get", {"name": name, "arguments": arguments or {}})
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
        raise McpProtocolError("prompts/get answer has no 'messages' array")
    return [
        McpPromptMessage(role=str(m.get("role")), content=m.get("content") or {})
        for m in raw["messages"]
        if isinstance(m, dict) and isinstance(m.get("content"), dict)
    ]


async def subscribe_resource(client: McpClient, uri: str, *, subscribe: bool = True) -> None:
    """``resources/subscribe`` (or ``resources/unsubscribe``) for ``uri``: the server's
    ``notifications/resources/updated`` for it then reach the client's event sink."""
    method = "resources/subscribe" if subscribe else "resources/unsubscribe"
    await client.request(method, {"uri": uri})
