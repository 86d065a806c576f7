"""The embedded model's pieces of the runtime: its timeouts and its agents' defaults."""

from __future__ import annotations

from agcore_actors.agent import Agent, ModelSettings
from agcore_actors.config._local import (
    LOCAL_MAX_TOKENS,
    LOCAL_TIMEOUTS,
    for_local_model,
    local_timeouts,
)
from agcore_actors.llm import Timeouts


def test_local_timeouts_only_ever_lengthen_and_keep_no_limit() -> None:
    short = Timeouts(attempt=10.0, idle=5.0, connect=1.0, call=60.0)
    assert local_timeouts(short) == LOCAL_TIMEOUTS
    long = Timeouts(attempt=1000.0, idle=None, connect=30.0, call=None)
    assert local_timeouts(long) == Timeouts(attempt=1000.0, idle=None, connect=30.0, call=None)


def test_local_agents_answer_at_temperature_0_within_a_bound_unless_they_say_otherwise() -> None:
    plain = for_local_model(Agent(name="a"))
    assert plain.model.temperature == 0.0 and plain.model.max_tokens == LOCAL_MAX_TOKENS
    assert plain.model.parallel_tool_calls is True
    own = for_local_model(
        Agent(
            name="b",
            model=ModelSettings(temperature=0.7, max_tokens=9, parallel_tool_calls=False),
        )
    )
    assert own.model.temperature == 0.7 and own.model.max_tokens == 9
    assert own.model.parallel_tool_calls is False
