"""Resolving a model source, and the chat template shipped for tool calls."""

from __future__ import annotations

import functools
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
    TemplateStyle,
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
    assert resolved.chat_template == qwen_tool_template("bare_json")
    assert events == []


@pytest.mark.parametrize("name", ["small", "default"])
async def test_a_catalog_model_is_served_with_its_own_template(tmp_path: Path, name: str) -> None:
    # The catalog said the 1.5B was served with json_array (several calls per reply) while
    # the file was served with json_block: one call per reply.
    model = _parts.entry(name)
    sparse(tmp_path / model.filename, model.size)
    resolved = await resolve_model(CatalogModel(name=name, cache_dir=tmp_path, download=False))
    assert model.template in STYLES
    assert resolved.chat_template == qwen_tool_template(model.template)


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


def render(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = TOOLS,
    style: TemplateStyle = "json_block",
) -> str:
    environment = jinja2.Environment()
    # As llama.cpp's tojson: insertion order, no HTML escapes.
    environment.filters["tojson"] = functools.partial(json.dumps, ensure_ascii=False)
    template = environment.from_string(qwen_tool_template(style))
    return template.render(messages=messages, tools=tools, add_generation_prompt=True)


CALL: dict[str, Any] = {"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
ANSWERED: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "18C"},
]
STYLES: list[TemplateStyle] = ["json_array", "json_block", "bare_json"]
BLOCK = ("json_block", "json_array")


@pytest.mark.parametrize("style", STYLES)
def test_the_template_offers_the_tools_and_asks_for_the_call_format(style: TemplateStyle) -> None:
    prompt = render([{"role": "user", "content": "Weather in Paris?"}], style=style)
    assert '{"name": "get_weather", "description": "Weather of a city"' in prompt
    assert '{"name": <tool name>, "arguments": <arguments object>}' in prompt
    assert ("```json" in prompt) == (style in BLOCK)
    assert prompt.endswith("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("style", STYLES)
def test_the_template_renders_a_tool_call_in_the_format_it_asks_for(style: TemplateStyle) -> None:
    prompt = render(ANSWERED, style=style)
    call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    shapes = {"json_block": f"```json\n{call}\n```", "json_array": f"```json\n[{call}]\n```"}
    shown = shapes.get(style, call)
    assert f"<|im_start|>assistant\n{shown}<|im_end|>" in prompt
    json.loads(call)


def test_the_array_template_renders_several_calls_as_one_array_and_their_results_as_one_turn() -> (
    None
):
    second = {"id": "c2", "type": "function",
              "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL, second]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "tool", "tool_call_id": "c2", "content": "21C"},
    ]
    prompt = render(messages, style="json_array")
    calls = (
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Rome"}}]'
    )
    assert f"<|im_start|>assistant\n```json\n{calls}\n```<|im_end|>" in prompt
    assert len(json.loads(calls)) == 2
    assert prompt.endswith(
        "<|im_start|>user\nTool result: 18C\nTool result: 21C\n"
        "Now answer the question in plain text using these results.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert prompt.count("<|im_start|>user") == 2


@pytest.mark.parametrize("style", STYLES)
def test_the_answer_to_a_tool_result_is_asked_in_plain_text_without_tools(
    style: TemplateStyle,
) -> None:
    prompt = render(ANSWERED, style=style)
    assert "You can call these tools" not in prompt
    assert prompt.endswith(
        "Tool result: 18C\nNow answer the question in plain text using this result."
        "<|im_end|>\n<|im_start|>assistant\n"
    )
    follow_up = render([*ANSWERED, {"role": "assistant", "content": "It is 18C."},
                        {"role": "user", "content": "And in Rome?"}], style=style)  # fmt: skip
    assert "You can call these tools" in follow_up  # offered again for the next request


@pytest.mark.parametrize("style", STYLES)
def test_without_tools_the_template_is_plain_chatml_with_the_system_prompt(
    style: TemplateStyle,
) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert render(messages, None, style) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render(messages[1:], None, style).startswith(
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>"
    )
