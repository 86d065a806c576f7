"""The ProviderActor of :func:`open_runtime` runs as many model calls at once as the
host lets turns run (``[host] max_turns_in_flight``) unless a provider's
``max_concurrency`` says fewer: never a hidden limit of its own."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.agent import HostConfig, SessionHost
from agcore_actors.config import ConfigError, open_runtime, parse_settings
from agcore_actors.config._concurrency import concurrency
from agcore_actors.llm._actor import DEFAULT_MAX_CONCURRENCY
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


async def test_a_providers_max_concurrency_bounds_its_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    took = await run_turns(settings_text("max_concurrency = 8\n"))
    assert 5 * LATENCY <= took < 6 * LATENCY, took  # 40 calls, 8 at a time


async def test_a_provider_limited_to_one_call_runs_them_one_at_a_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    took = await run_turns(settings_text("max_concurrency = 1\n"), turns=3)
    assert 3 * LATENCY <= took < 4 * LATENCY, took


async def test_each_provider_has_its_own_limit(autojump_clock: trio.testing.MockClock) -> None:
    """A provider held to 2 calls at once never holds back another one's calls."""
    text = (
        '[providers.narrow]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "max_concurrency = 2\n"
        '[providers.wide]\nkind = "anthropic"\nbase_url = "http://127.0.0.1:9"\n'
        "[agents.a]\nprovider = 'narrow'\n[agents.b]\nprovider = 'wide'\n"
    )
    providers = {
        name: ScriptedProvider([ScriptedReply(text="done", latency=LATENCY)], name=name)
        for name in ("narrow", "wide")
    }
    finished: dict[str, list[float]] = {"a": [], "b": []}
    async with (
        ActorSystem(strict=True, seed=0) as system,
        open_runtime(parse_settings(text), system=system, providers=providers) as runtime,
        SessionHost(system, runtime.bundle_for("a"), runtime.host_config, name="a") as a,
        SessionHost(system, runtime.bundle_for("b"), runtime.host_config, name="b") as b,
    ):
        start = trio.current_time()

        async def one(agent: str, host: SessionHost, n: int) -> None:
            assert (await host.run(f"{agent}{n}", "hi")).status == "completed"
            finished[agent].append(trio.current_time() - start)

        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(one, "a", a, n)
                nursery.start_soon(one, "b", b, n)
    assert max(finished["b"]) < 2 * LATENCY  # all six at once
    assert sorted(round(t / LATENCY) for t in finished["a"]) == [1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("value", ["0", "-3", "2.5", '"8"', "true", "inf"])
@pytest.mark.parametrize("kind", ["openai", "anthropic", "local"])
def test_a_bad_max_concurrency_is_a_config_error_naming_the_key(kind: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(f'[providers.p]\nkind = "{kind}"\nmax_concurrency = {value}\n')
    assert caught.value.kind == "config"
    assert "providers.p.max_concurrency" in str(caught.value)


def test_the_default_limit_is_the_hosts_turns_in_flight_and_the_actors_their_sum() -> None:
    text = settings_text("max_concurrency = 3\n", "max_turns_in_flight = 40\n") + (
        '[providers.other]\nkind = "anthropic"\n'
    )
    settings = parse_settings(text)
    assert concurrency(settings, ["fake"]) == ({"fake": 3}, 3)
    assert concurrency(settings, ["fake", "other"]) == ({"fake": 3, "other": 40}, 43)
    assert concurrency(parse_settings(settings_text()), ["fake"]) == ({"fake": 256}, 256)
    one = parse_settings(settings_text("max_concurrency = 1\n"))
    assert concurrency(one, ["fake"]) == ({"fake": 1}, 2)  # the actor is concurrent


def test_the_environment_sets_a_providers_max_concurrency_and_is_checked_alike() -> None:
    variable = "AGCORE_PROVIDERS__FAKE__MAX_CONCURRENCY"
    settings = parse_settings(settings_text(), env={variable: "8"})
    assert settings.providers["fake"].max_concurrency == 8
    with pytest.raises(ConfigError, match=f"{variable}: providers.fake.max_concurrency"):
        parse_settings(settings_text(), env={variable: "0"})


def test_a_provider_actor_runs_as_many_calls_as_a_host_runs_turns_by_default() -> None:
    assert HostConfig().max_turns_in_flight == DEFAULT_MAX_CONCURRENCY
