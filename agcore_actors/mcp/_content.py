"""MCP tool-result content as the chat types' content parts.

The MCP content types (spec 2025-06-18, ``CallToolResult.content``) map so::

    {"type": "text", "text"}                         -> TextPart
    {"type": "image", "data", "mimeType"}            -> ImagePart (a data: URL)
    {"type": "audio", "data", "mimeType"}            -> AudioPart (wav, mp3, ...), else a
                                                        FilePart of that type
    {"type": "resource", "resource": {uri, text}}    -> TextPart naming the uri
    {"type": "resource", "resource": {uri, blob,     -> ImagePart for an image type, else
                                      mimeType}}        FilePart named by the uri
    {"type": "resource_link", "uri", "name"}         -> TextPart naming the link

An item of an unknown type, or one whose fields do not fit, becomes a TextPart saying
what was left out: never silently dropped. Pure functions, no I/O.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..llm import (
    ContentPart,
    InvalidContent,
    TextPart,
    audio_part_of,
    file_part_of,
    image_part_of,
)

__all__ = ["has_media", "mcp_parts"]

_MEDIA = frozenset(("image", "audio", "resource", "resource_link"))


def has_media(content: list[dict[str, Any]]) -> bool:
    """True if ``content`` has an item other than text."""
    return any(item.get("type") in _MEDIA for item in content)


def _decoded(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _media(kind: str, data: bytes, mime: str, name: str | None) -> ContentPart:
    if kind == "image" or mime.startswith("image/"):
        return image_part_of(data, mime)
    if kind == "audio":
        try:
            return audio_part_of(data, mime)
        except InvalidContent:
            pass
    return file_part_of(data, mime, name)


def _item(item: dict[str, Any]) -> ContentPart:
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return TextPart(item["text"])
    if kind in ("image", "audio"):
        data, mime = _decoded(item.get("data")), item.get("mimeType")
        if data is not None and isinstance(mime, str) and mime:
            return _media(str(kind), data, mime, None)
    if kind == "resource" and isinstance(item.get("resource"), dict):
        resource = item["resource"]
        uri = str(resource.get("uri", ""))
        if isinstance(resource.get("text"), str):
            return TextPart(f"[resource {uri}]\n{resource['text']}")
        data, mime = _decoded(resource.get("blob")), resource.get("mimeType")
        if data is not None:
            mime = mime if isinstance(mime, str) and mime else "application/octet-stream"
            return _media("resource", data, mime, uri.rsplit("/", 1)[-1] or None)
    if kind == "resource_link" and isinstance(item.get("uri"), str):
        name = item.get("name") or item["uri"]
        return TextPart(f"[resource link {name}: {item['uri']}]")
    return TextPart(f"[MCP content of type {kind!r} left out: it does not fit its type]")


def mcp_parts(content: list[dict[str, Any]]) -> list[ContentPart]:
    """``content`` (a ``tools/call`` result's) as content parts, in order."""
    return [_item(item) for item in content]
