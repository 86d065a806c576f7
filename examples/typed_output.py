"""Typed output: the answer must decode into a msgspec Struct, or the model is asked again.

    python examples/typed_output.py "Paris"

An agent with ``output_type=Forecast`` sends the Struct's JSON Schema as the request's
``response_format``; the final answer is decoded and validated with msgspec. An answer
that does not fit is shown the validation error and re-asked, up to
``AgentConfig.output_retries`` times (then the turn fails with ``output_validation``).
``TurnResult.output`` holds the decoded value as plain data.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import msgspec
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, AgentConfig, SessionHost, StoreTurns
from agcore_actors.store import InMemorySessions, session_store_spec

from _model import llm_spec


class Forecast(msgspec.Struct):
    """Tomorrow's weather in a city."""

    city: str
    condition: Literal["sunny", "cloudy", "rain", "snow"]
    celsius: Annotated[float, msgspec.Meta(ge=-90, le=60)]


async def main(city: str) -> None:
    async with ActorSystem() as actors:
        llm = await actors.root.start_child(llm_spec())
        store = await actors.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        forecaster = Agent(
            name="forecaster",
            instructions="Answer with tomorrow's forecast as JSON, nothing else.",
            output_type=Forecast,
        )
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store))
            .agent(forecaster)
            .config(AgentConfig(output_retries=2))
            .build()
        )
        async with SessionHost(actors, bundle) as host:
            result = await host.run("chat-1", f"Tomorrow in {city}?")
    if result.status != "completed":
        print(f"no forecast: {result.error_kind}: {result.error}", file=sys.stderr)
        sys.exit(1)
    # The output is plain data that passed validation; convert it back to the Struct.
    forecast = msgspec.convert(result.output, Forecast)
    print(f"{forecast.city}: {forecast.condition}, {forecast.celsius:g} °C")
    print(f"({result.model_calls} model call(s))")


if __name__ == "__main__":
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "Paris")
