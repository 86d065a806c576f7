"""MCP tool results with images, audio and resources become content parts (the MCP
spec's content types, from a real stdio server), never dropped; text is still redacted."""

from __future__ import annotations

import sys
from typing import Any

from agcore_actors.llm import (
    AudioPart,
    FileData,
    FilePart,
    ImagePart,
    ImageUrl,
    InputAudio,
    TextPart,
)
from agcore_actors.mcp import StdioServer
from agcore_actors.mcp._content import mcp_parts
from agcore_actors.tools import ToolStatus
from tests.mcp.servers import run_tools, running
from tests.peers.mcp import RAW_SERVER
from tests.peers.mcp_raw_server import MEDIA_CONTENT

EXPECTED = [
    ImagePart(ImageUrl("data:image/png;base64,iVBORw0KGgo=")),
    AudioPart(InputAudio("UklGRg==", "wav")),
    FilePart(FileData(file_data="data:application/pdf;base64,JVBERg==", filename="r.pdf")),
]


def test_every_mcp_content_type_maps_to_a_part_in_order() -> None:
    assert mcp_parts(MEDIA_CONTENT) == [
        TextPart("the screen"),
        EXPECTED[0],
        EXPECTED[1],
        TextPart("[resource file:///notes.txt]\na note"),
        EXPECTED[2],
        TextPart("[resource link big.log: file:///big.log]"),
    ]


def test_content_that_does_not_fit_its_type_is_named_not_dropped() -> None:
    odd: list[dict[str, Any]] = [
        {"type": "image", "data": "not base64!", "mimeType": "image/png"},
        {"type": "video", "data": "AA=="},
    ]
    texts = [p.text for p in mcp_parts(odd) if isinstance(p, TextPart)]
    assert len(texts) == 2 and all("left out" in t for t in texts)
    assert "'image'" in texts[0] and "'video'" in texts[1]


async def test_a_real_servers_image_audio_and_resources_reach_the_tool_result() -> None:
    server = StdioServer(sys.executable, [str(RAW_SERVER), "media"])
    async with running({"raw": server}) as (_, _, executor, _):
        (result,) = await run_tools(executor, ("raw-shot", {}))
    assert result.status == ToolStatus.OK
    assert result.content == (
        "the screen\n[resource file:///notes.txt]\na note\n[resource link big.log: file:///big.log]"
    )
    assert result.parts == EXPECTED
