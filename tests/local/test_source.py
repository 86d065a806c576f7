"""Resolving a model source, and the chat template shipped for tool calls."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jinja2
import pytest

from agcore_actors.local import (
    CatalogModel,
    GgufFile,
    LocalModelNotFound,
    ProgressEvent,
    _parts,
    qwen_tool_template,
    resolve_model,
)


def sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.truncate(size)
    return path


async def test_a_gguf_file_is_served_as_it_is(tmp_path: Path) -> None:
    path = sparse(tmp_path / "mine.gguf", 10)
    resolved = await resolve_model(GgufFile(path=path))
    assert (resolved.path, resolved.alias, resolved.chat_template) == (path, "mine", None)
    named = await resolve_model(GgufFile(path=path, alias="m", chat_template="{{ x }}"))
    assert (named.alias, named.chat_template) == ("m", "{{ x }}")


async def test_a_missing_gguf_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(LocalModelNotFound, match="no such file") as info:
        await resolve_model(GgufFile(path=tmp_path / "absent.gguf"))
    assert isinstance(info.value, LookupError)


async def test_a_cached_catalog_model_is_used_without_joining(tmp_path: Path) -> None:
    model = _parts.QWEN_0_5B
    path = sparse(tmp_path / model.filename, model.size)
    events: list[ProgressEvent] = []
    resolved = await resolve_model(
        CatalogModel(name="small", cache_dir=tmp_path, download=False), progress=events.append
    )
    assert resolved.path == path
    assert resolved.alias == "qwen2.5-coder-0.5b"
    assert resolved.chat_template == qwen_tool_template()
    assert events == []


async def test_a_catalog_model_without_file_parts_or_download_is_not_found(
    tmp_path: Path,
) -> None:
    with pytest.raises(LocalModelNotFound, match="parts are not installed"):
        await resolve_model(CatalogModel(name="small", cache_dir=tmp_path, download=False))
    assert os.listdir(tmp_path) == []


def test_a_catalog_model_must_be_in_the_catalog() -> None:
    with pytest.raises(ValueError, match="choose one of"):
        CatalogModel(name="llama-70b")
    assert CatalogModel().entry is _parts.QWEN_1_5B


# -- the template (rendered with jinja2 here; llama.cpp renders it the same way) ----------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = TOOLS) -> str:
    template = jinja2.Environment().from_string(qwen_tool_template())
    return template.render(messages=messages, tools=tools, add_generation_prompt=True)


def test_the_template_offers_the_tools_and_asks_for_a_bare_json_call() -> None:
    prompt = render([{"role": "user", "content": "Weather in Paris?"}])
    assert '"name": "get_weather"' in prompt
    assert '{"name": <tool name>, "arguments": <arguments object>}' in prompt
    assert prompt.endswith("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")


def test_the_template_renders_a_tool_call_as_the_bare_json_it_asks_for() -> None:
    call = {"id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
    prompt = render(
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        ]
    )
    rendered_call = '<|im_start|>assistant\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert rendered_call in prompt
    json.loads(rendered_call.split("\n", 1)[1])
    after = prompt.split("18C", 1)[1]
    assert "plain text" in after  # the answer after a result is text, not another call


def test_the_template_without_tools_is_plain_chatml_with_the_system_prompt() -> None:
    prompt = render(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], None
    )
    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
