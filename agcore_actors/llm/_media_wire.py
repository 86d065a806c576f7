"""Media parts in each provider's wire shape, and the check that a model takes them.

OpenAI Chat Completions (:func:`openai_messages`): user parts go as they are
(``image_url`` with a ``data:`` or http(s) URL, ``input_audio``, ``file`` with
``file_data``). A tool message takes only text there, so the media parts of tool
results become one user message right after the run of tool messages that carried
them, each result's text saying ``(attached below)``: the call ids stay answered in
order and the model still sees the image.

Anthropic Messages (:func:`anthropic_blocks`): text → ``text``; an image → ``image``
with a ``base64`` source (``media_type``, ``data``) or a ``url`` source; a file → a
``document`` (PDF as ``base64``, ``text/plain`` as a ``text`` source); the same blocks
go inside a ``tool_result``'s ``content``. Audio has no Anthropic shape.

A part of a kind the provider's configuration does not accept (``input_media``), or has
no shape for, is :class:`~agcore_actors.llm.UnsupportedContent` before any request
is sent: never a prompt with the part silently dropped or garbled.
"""

from __future__ import annotations

import base64
from collections.abc import Collection
from typing import Any

from ._errors import UnsupportedContent
from ._media import media_kind
from ._types import AudioPart, Content, FilePart, ImagePart, TextPart

__all__ = ["ALL_MEDIA", "anthropic_blocks", "openai_messages"]

#: Every media kind a part may carry.
ALL_MEDIA: frozenset[str] = frozenset(("image", "audio", "file"))

_ATTACHED = "(attached below)"


def _check(kind: str, accepts: Collection[str], provider: str, where: str) -> None:
    if kind != "text" and kind not in accepts:
        raise UnsupportedContent(provider, kind, where)


def _kind_of(part: dict[str, Any]) -> str:
    return {"image_url": "image", "input_audio": "audio", "file": "file"}.get(
        str(part.get("type")), "text"
    )


def openai_messages(
    messages: list[dict[str, Any]], accepts: Collection[str], provider: str
) -> list[dict[str, Any]]:
    """``messages`` (the request's, as builtins) ready for an OpenAI-compatible body."""
    out: list[dict[str, Any]] = []
    attached: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if attached and role != "tool":
            out.append({"role": "user", "content": attached})
            attached = []
        if not isinstance(content, list):
            out.append(message)
            continue
        for part in content:
            _check(_kind_of(part), accepts, provider, f"a {role} message")
        if role == "tool" and any(_kind_of(p) != "text" for p in content):
            texts = [p for p in content if _kind_of(p) == "text"]
            attached += [p for p in content if _kind_of(p) != "text"]
            texts.append({"type": "text", "text": _ATTACHED})
            message = {**message, "content": texts}
        out.append(message)
    if attached:
        out.append({"role": "user", "content": attached})
    return out


def _file_block(part: FilePart, provider: str) -> dict[str, Any]:
    url = part.file.file_data
    if url is None or not url.startswith("data:") or ";base64," not in url[:200]:
        raise UnsupportedContent(provider, "file", "a file by id")
    media, data = url[5:].split(";base64,", 1)
    if media == "application/pdf":
        source: dict[str, Any] = {"type": "base64", "media_type": media, "data": data}
    elif media.startswith("text/"):
        text = base64.b64decode(data).decode("utf-8", errors="replace")
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        raise UnsupportedContent(provider, f"file ({media})")
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.file.filename:
        block["title"] = part.file.filename
    return block


def anthropic_blocks(
    content: Content | None, accepts: Collection[str], provider: str
) -> list[dict[str, Any]]:
    """``content`` as Anthropic content blocks (empty text left out)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        _check(media_kind(part), accepts, provider, "a message")
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = part.image_url.url
            if url.startswith("data:") and ";base64," in url[:200]:
                media, data = url[5:].split(";base64,", 1)
                source = {"type": "base64", "media_type": media, "data": data}
            else:
                source = {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
        elif isinstance(part, FilePart):
            blocks.append(_file_block(part, provider))
        elif isinstance(part, AudioPart):
            raise UnsupportedContent(provider, "audio")
    return blocks
