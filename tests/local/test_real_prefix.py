"""The prompt prefix cache with the real server (0.5B): a second server restores the
prefix the first one saved, and answers exactly as a server without the cache does."""

from __future__ import annotations

from pathlib import Path

import attrs
import httpx2
import pytest

from agcore_actors import ActorSystem
from agcore_actors.config._local import start_local
from agcore_actors.llm import (
    ChatRequest,
    FunctionDefinition,
    ToolDefinition,
    system,
    user,
)
from agcore_actors.local import LocalModelConfig, ProgressEvent
from tests.peers.local_model import small_model_config

pytestmark = pytest.mark.slow

TOOLS = [
    ToolDefinition(
        FunctionDefinition(
            "get_weather",
            "Get the current weather in a city.",
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        )
    )
]
REQUEST = ChatRequest(
    messages=[system("Answer briefly."), user("What is the weather in Paris?")],
    tools=TOOLS,
    temperature=0.0,
    max_tokens=48,
)


async def answer(config: LocalModelConfig) -> tuple[str, list[str]]:
    events: list[ProgressEvent] = []
    config = attrs.evolve(config, progress=events.append)
    async with ActorSystem() as actors, httpx2.AsyncClient(timeout=300) as client:
        _, provider = await start_local(actors, "local", config)
        response = await provider.chat(client, REQUEST)
    calls = [f"{c.function.name}{c.function.arguments}" for c in response.message.tool_calls or []]
    return response.message.text + "".join(calls), [e.detail for e in events if e.stage == "prefix"]


def saved(directory: Path) -> list[Path]:
    return list(directory.iterdir())


async def test_a_second_server_restores_the_prefix_and_answers_as_without_the_cache(
    tmp_path: Path,
) -> None:
    cached = small_model_config(prefix_dir=tmp_path, threads=1)
    first, first_steps = await answer(cached)
    assert first_steps == ["warming", "warmed"]
    assert sorted(p.suffix for p in saved(tmp_path)) == [".bin", ".sha256"]
    second, second_steps = await answer(cached)
    assert second_steps == ["restored"]
    plain, plain_steps = await answer(small_model_config(prefix_cache=False, threads=1))
    assert plain_steps == [] and first == second == plain and plain
