"""The ProviderActor of :func:`open_runtime` runs as many model calls at once as the
host lets turns run (``[host] max_turns_in_flight``) unless a provider's
``max_concurrency`` says fewer: never a hidden limit of its own."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.agent import SessionHost
from agcore_actors.config import open_runtime, parse_settings
from agcore_actors.testing import ScriptedProvider, ScriptedReply

LATENCY = 10.0
TURNS = 40


def settings_text(provider_extra: str = "", host_extra: str = "") -> str:
    return (
        '[providers.fake]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        f'model = "fake"\n{provider_extra}[host]\n{host_extra}'
    )


async def run_turns(text: str, turns: int = TURNS) -> float:
    """Seconds (virtual) that ``turns`` concurrent first turns of distinct sessions take."""
    slow = ScriptedProvider([ScriptedReply(text="done", latency=LATENCY)], name="fake")
    settings = parse_settings(text)
    async with (
        ActorSystem(strict=True, seed=0) as system,
        open_runtime(settings, system=system, providers={"fake": slow}) as runtime,
        SessionHost(runtime.system, runtime.bundle, runtime.host_config) as host,
    ):
        start = trio.current_time()
        results: list[str] = []

        async def one(n: int) -> None:
            results.append((await host.run(f"s{n}", "hi")).status)

        async with trio.open_nursery() as nursery:
            for n in range(turns):
                nursery.start_soon(one, n)
        took = trio.current_time() - start
    assert results == ["completed"] * turns
    return took


async def test_forty_concurrent_turns_take_one_model_latency_not_three(
    autojump_clock: trio.testing.MockClock,
) -> None:
    took = await run_turns(settings_text())
    assert LATENCY <= took < 2 * LATENCY, took
