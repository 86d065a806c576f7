"""The typed model settings in each provider's request body, as pure encodings: what the
Anthropic encoder makes of ``reasoning_effort``, ``thinking_budget``, ``seed`` and
``parallel_tool_calls``, and what the OpenAI-compatible one leaves out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agcore_actors.llm import ChatRequest, OpenAIConfig, tool_definition, user
from agcore_actors.llm.wire import anthropic_request_body, openai_request_body

TOOL = tool_definition("f", {"type": "object", "properties": {}})


def anthropic(**fields: Any) -> dict[str, Any]:
    request = ChatRequest(messages=[user("hi")], **fields)
    body, _ = anthropic_request_body(
        request, model="c", max_tokens=1000, headers={}, extra_body={}, stream=False
    )
    decoded: dict[str, Any] = json.loads(body)
    return decoded


def openai(**fields: Any) -> dict[str, Any]:
    request = ChatRequest(messages=[user("hi")], **fields)
    body, _ = openai_request_body(request, OpenAIConfig(api_key="k", model="m"), stream=False)
    decoded: dict[str, Any] = json.loads(body)
    return decoded


@pytest.mark.parametrize(
    ("effort", "budget"), [("minimal", 1024), ("low", 2048), ("medium", 8192), ("high", 24576)]
)
def test_an_effort_becomes_a_thinking_budget_with_room_for_the_answer(
    effort: str, budget: int
) -> None:
    body = anthropic(reasoning_effort=effort)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] > budget
    assert "reasoning_effort" not in body


def test_a_thinking_budget_wins_over_an_effort_and_is_at_least_the_apis_least() -> None:
    assert (
        anthropic(reasoning_effort="high", thinking_budget=3000)["thinking"]["budget_tokens"]
        == 3000
    )
    assert anthropic(thinking_budget=10)["thinking"]["budget_tokens"] == 1024
    assert anthropic(thinking_budget=500, max_tokens=4000)["max_tokens"] == 4000


def test_anthropic_has_no_seed_and_no_thinking_without_a_setting() -> None:
    body = anthropic(seed=3, top_p=0.5)
    assert "seed" not in body and "thinking" not in body and body["top_p"] == 0.5


def test_no_parallel_calls_is_sent_with_every_tool_choice_but_none() -> None:
    assert anthropic(tools=[TOOL], parallel_tool_calls=False)["tool_choice"] == {
        "type": "auto",
        "disable_parallel_tool_use": True,
    }
    assert anthropic(tools=[TOOL], tool_choice="none", parallel_tool_calls=False)[
        "tool_choice"
    ] == {"type": "none"}
    assert "tool_choice" not in anthropic(parallel_tool_calls=False)  # no tools: nothing


def test_openai_bodies_carry_the_openai_fields_and_never_the_thinking_budget() -> None:
    body = openai(seed=3, top_p=0.5, stop=["x"], reasoning_effort="low", thinking_budget=2048)
    assert (body["seed"], body["top_p"], body["stop"], body["reasoning_effort"]) == (
        3,
        0.5,
        ["x"],
        "low",
    )
    assert "thinking_budget" not in body
