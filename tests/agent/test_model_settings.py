"""Typed model settings per agent and per turn: what each request carries (scripted
provider), and the same turn reaching a fake OpenAI-compatible and a fake Anthropic
server on 127.0.0.1 in their real wire shapes."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors.agent import Agent, ModelSettings
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AnthropicConfig,
    AnthropicProvider,
    NamedToolChoice,
    OpenAICompatibleProvider,
    OpenAIConfig,
)
from agcore_actors.testing import ScriptedProvider, ScriptedReply
from tests.agent.capability_rig import cap_host
from tests.peers.fault_server import FaultServer, completion, json_reply

SETTINGS = ModelSettings(
    model="m",
    temperature=0.2,
    top_p=0.9,
    stop="END",
    seed=7,
    tool_choice="record",
    parallel_tool_calls=False,
    reasoning_effort="low",
    thinking_budget=2048,
    max_tokens=500,
)


async def test_the_agents_settings_reach_every_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = ScriptedProvider([ScriptedReply(text="ok")])
    async with cap_host([provider], agents=[Agent(name="a", model=SETTINGS)]) as cap:
        await cap.host.run("s", "hi")
    request = provider.requests[0]
    assert (request.temperature, request.top_p, request.stop, request.seed) == (
        0.2,
        0.9,
        ["END"],
        7,
    )
    assert isinstance(request.tool_choice, NamedToolChoice)
    assert request.tool_choice.function.name == "record"
    assert request.parallel_tool_calls is False
    assert (request.reasoning_effort, request.thinking_budget, request.max_tokens) == (
        "low",
        2048,
        500,
    )


async def test_a_turns_settings_override_the_agents_for_that_turn_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = ScriptedProvider([ScriptedReply(text="ok")])
    async with cap_host([provider], agents=[Agent(name="a", model=SETTINGS)]) as cap:
        overrides = am.ModelOverrides(temperature=1.0, seed=99, tool_choice="none", stop=["X", "Y"])
        await cap.host.run("s", "one", settings=overrides)
        async with cap.host.submit("s", "two", settings=am.ModelOverrides(top_p=0.5)) as events:
            async for _ in events:
                pass
        await cap.host.run("s", "three")
    one, two, three = provider.requests
    assert (one.temperature, one.seed, one.tool_choice, one.stop) == (1.0, 99, "none", ["X", "Y"])
    assert one.top_p == 0.9  # not overridden: the agent's
    assert (two.top_p, two.temperature, two.seed) == (0.5, 0.2, 7)
    assert (three.temperature, three.seed, three.top_p) == (0.2, 7, 0.9)


def test_bad_settings_are_refused_where_they_are_built() -> None:
    with pytest.raises(ValueError, match="reasoning_effort"):
        ModelSettings(reasoning_effort="extreme")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="thinking_budget"):
        ModelSettings(thinking_budget=0)
    with pytest.raises(ValueError, match="tool_choice"):
        ModelSettings(tool_choice="")


async def test_settings_reach_an_openai_compatible_server_in_its_shape(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(json_reply(completion("ok")))
    provider = OpenAICompatibleProvider(
        OpenAIConfig(name="oa", base_url=url, api_key="sk-test-3", model="m")
    )
    async with cap_host([provider], agents=[Agent(name="a", model=SETTINGS)]) as cap:
        await cap.host.run("s", "hi")
    body: dict[str, Any] = scenario.requests[0].body
    assert body["top_p"] == 0.9 and body["stop"] == ["END"] and body["seed"] == 7
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record"}}
    assert body["parallel_tool_calls"] is False and body["reasoning_effort"] == "low"
    assert "thinking_budget" not in body  # not an OpenAI field
    assert body["tools"]  # tool settings go with the tools offered


async def test_settings_reach_an_anthropic_server_in_its_shape(fault_server: FaultServer) -> None:
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    url, scenario = fault_server.script(json_reply(reply))
    provider = AnthropicProvider(
        AnthropicConfig(base_url=fault_server.root(url), api_key="sk-ant-test-1", model="c")
    )
    async with cap_host([provider], agents=[Agent(name="a", model=SETTINGS)]) as cap:
        result = await cap.host.run("s", "hi")
    assert result.status == "completed"
    body: dict[str, Any] = scenario.requests[0].body
    assert body["top_p"] == 0.9 and body["stop_sequences"] == ["END"]
    assert "seed" not in body and "reasoning_effort" not in body
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "record",
        "disable_parallel_tool_use": True,
    }
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048  # room for the answer beyond the thinking


async def test_reasoning_effort_alone_becomes_an_anthropic_thinking_budget(
    fault_server: FaultServer,
) -> None:
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "c",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    url, scenario = fault_server.script(json_reply(reply))
    provider = AnthropicProvider(
        AnthropicConfig(base_url=fault_server.root(url), api_key="sk-ant-test-1", model="c")
    )
    agent = Agent(
        name="a", model=ModelSettings(reasoning_effort="medium", parallel_tool_calls=False)
    )
    async with cap_host([provider], agents=[agent]) as cap:
        await cap.host.run("s", "hi")
    body: dict[str, Any] = scenario.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
