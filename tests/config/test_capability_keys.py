"""The agent keys of issue 31 in a file: model settings, the fallback chain (its providers
checked across tables), budgets and prices, each arriving in the library's objects."""

from __future__ import annotations

import pytest

from agcore_actors.agent import ModelSettings
from agcore_actors.config import ConfigError, parse_settings
from agcore_actors.config._runtime import agent_config, agents_of
from agcore_actors.llm import Pricing

TEXT = """
default_provider = "main"
[providers.main]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
[providers.spare]
kind = "anthropic"
[agents.bot]
model = "big"
temperature = 0.1
top_p = 0.8
stop = ["END"]
seed = 3
tool_choice = "required"
parallel_tool_calls = false
reasoning_effort = "high"
thinking_budget = 4000
fallback = ["spare/claude-x", "main/small"]
fallback_on = ["rate_limit", "timeout"]
turn_tokens = 1000
session_cost = 2.5
concurrent_tool_calls = 4
prices = { "big" = { input = 1.0, output = 3.0 }, "spare/claude-x" = { input = 2.0 } }
"""


def test_the_agent_keys_reach_its_model_settings_and_budget() -> None:
    settings = parse_settings(TEXT)
    (agent,) = agents_of(settings)
    model = agent.model
    assert (model.provider, model.model, model.top_p, model.stop, model.seed) == (
        "main",
        "big",
        0.8,
        ("END",),
        3,
    )
    assert (model.tool_choice, model.parallel_tool_calls) == ("required", False)
    assert (model.reasoning_effort, model.thinking_budget) == ("high", 4000)
    assert [(f.provider, f.model, f.temperature) for f in model.fallback] == [
        ("spare", "claude-x", 0.1),
        ("main", "small", 0.1),
    ]
    assert model.fallback_on == frozenset({"rate_limit", "timeout"})
    budget = agent_config(settings.agents["bot"]).budget
    assert (budget.turn_tokens, budget.session_cost, budget.concurrent_tool_calls) == (
        1000,
        2.5,
        4,
    )
    assert budget.prices == {"big": Pricing(1.0, 3.0), "spare/claude-x": Pricing(2.0)}
    assert isinstance(model, ModelSettings)


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ('fallback = ["nowhere"]', "agents.bot.fallback[0]"),
        ('fallback_on = ["weather"]', "fallback_on"),
        ('reasoning_effort = "max"', "reasoning_effort"),
        ("thinking_budget = 0", "thinking_budget"),
        ('prices = { "m" = { input = -1.0 } }', "input"),
    ],
)
def test_bad_capability_keys_are_refused_naming_the_key(line: str, names: str) -> None:
    text = '[providers.main]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
    with pytest.raises(ConfigError, match=names.replace("[", r"\[").replace("]", r"\]")):
        parse_settings(text + f"[agents.bot]\n{line}\n")
