"""The ``json_array`` template (several tool calls per reply) in llama.cpp itself, with the
real 0.5B: the server reports parallel calls for it, renders an assistant's several calls
as the one array the prompt asks for, and their results as one user turn — as
tests/local/test_source.py checks with jinja2. Whether the model writes several calls is
measured, not asserted (``benchmarks/local_model.py --tool-calls``): at temperature 0 the
0.5B is at the edge between an array and one object for some questions."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from agcore_actors import ActorSystem
from agcore_actors.local import CatalogModel, GgufFile, local_model_spec, qwen_tool_template
from agcore_actors.local.messages import GetEndpoint
from tests.peers.local_model import small_model_config

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}


def call(call_id: str, city: str) -> dict[str, Any]:
    arguments = f'{{"city": "{city}"}}'
    return {"id": call_id, "type": "function",
            "function": {"name": "get_weather", "arguments": arguments}}  # fmt: skip


async def test_llama_cpp_renders_several_calls_as_one_array_and_their_results_as_one_turn() -> None:
    model = small_model_config().source
    assert isinstance(model, CatalogModel) and model.cache_dir is not None
    source = GgufFile(
        path=model.cache_dir / model.entry.filename, chat_template=qwen_tool_template("json_array")
    )
    answered = [
        {"role": "user", "content": "What is the weather in Paris and in London?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [call("a", "Paris"), call("b", "London")],
        },
        {"role": "tool", "tool_call_id": "a", "content": "18C"},
        {"role": "tool", "tool_call_id": "b", "content": "12C"},
    ]
    async with ActorSystem(strict=True) as system:
        server = await system.root.start_child(
            local_model_spec(config=small_model_config(source=source, prefix_cache=False))
        )
        endpoint = await server.ask(GetEndpoint(), timeout=120)
        headers = {**endpoint.headers, "Authorization": f"Bearer {endpoint.api_key}"}
        root = endpoint.base_url.removesuffix("/v1")
        async with httpx2.AsyncClient(headers=headers, timeout=600, trust_env=False) as client:
            props = (await client.get(root + "/props")).json()
            rendered = await client.post(
                root + "/apply-template", json={"messages": answered, "tools": [WEATHER]}
            )
            final = await client.post(
                endpoint.base_url + "/chat/completions",
                json={"messages": answered, "tools": [WEATHER], "temperature": 0,
                      "max_tokens": 64, "parallel_tool_calls": True},
            )  # fmt: skip
    assert props["chat_template_caps"]["supports_parallel_tool_calls"] is True
    prompt = rendered.json()["prompt"]
    calls = (
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "London"}}]'
    )
    assert f"<|im_start|>assistant\n```json\n{calls}\n```<|im_end|>\n" in prompt, prompt[-400:]
    assert prompt.endswith(
        "<|im_start|>user\nTool result: 18C\nTool result: 12C\n"
        "Now answer the question in plain text using these results.<|im_end|>\n"
        "<|im_start|>assistant\n"
    ), prompt[-300:]
    assert "You can call these tools" not in prompt
    # The answer to both results is plain text (the tools are left out of that prompt).
    message = final.json()["choices"][0]["message"]
    assert not message.get("tool_calls") and message["content"].strip()
