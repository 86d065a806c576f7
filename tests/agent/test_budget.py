"""Budgets: the accounting and the limit decision against an independent model (exact
fractions), and each limit end to end through SessionHost: turn and session tokens and
cost (session limits survive eviction and a new host on the same store), tool calls per
turn, and the cap on concurrent tool calls (200 requested calls, cancelled anywhere:
every call id answered exactly once)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors.agent import (
    Agent,
    AgentConfig,
    Budget,
    HostConfig,
    ModelSettings,
    SessionHost,
)
from agcore_actors.agent import messages as am
from agcore_actors.agent.policy import SPEND_FACT, Spend, exceeded, price_of, spend_of
from agcore_actors.llm import ChatRequest, Pricing, Usage
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from tests.agent.capability_rig import answered_once, cap_host, events_of, final

# -- the accounting, against exact fractions --------------------------------------------

MODELS = ["m1", "m2", "m3"]
PRICES = {"m1": (1, 2), "p/m2": (3, 5)}  # input, output per million; m3 has none


def model_price(provider: str, model: str) -> tuple[int, int] | None:
    return PRICES.get(f"{provider}/{model}") or PRICES.get(model)


call = st.tuples(
    st.sampled_from(["p", "q"]), st.sampled_from(MODELS), st.integers(0, 5000), st.integers(0, 5000)
)


@st.composite
def budgets(draw: st.DrawFn) -> dict[str, Any]:
    def limit(top: int) -> int | None:
        return draw(st.none() | st.integers(1, top))

    # Cost limits sit half a micro-unit off every reachable cost: no float tie.
    def cost_limit() -> Fraction | None:
        micro = draw(st.none() | st.integers(0, 200_000))
        return None if micro is None else Fraction(2 * micro + 1, 2_000_000)

    return {
        "turn_tokens": limit(30_000),
        "turn_cost": cost_limit(),
        "session_tokens": limit(60_000),
        "session_cost": cost_limit(),
    }


@settings(max_examples=300)
@given(
    limits=budgets(),
    before=st.tuples(st.integers(0, 40_000), st.integers(0, 100_000)),
    calls=st.lists(call, max_size=8),
)
def test_budget_accounting_matches_exact_arithmetic(
    limits: dict[str, Any], before: tuple[int, int], calls: list[tuple[str, str, int, int]]
) -> None:
    prices = {name: Pricing(input=i, output=o) for name, (i, o) in PRICES.items()}
    as_set: dict[str, Any] = {
        k: (float(v) if isinstance(v, Fraction) else v) for k, v in limits.items()
    }
    budget = Budget(**as_set, prices=prices)
    session_tokens, session_micro = before
    session = Spend(session_tokens, session_micro / 1_000_000)
    turn = Spend()
    exact_tokens, exact_cost = 0, Fraction(0)
    for provider, model, tin, tout in calls:
        price = price_of(prices, provider, model)
        turn = turn + spend_of(Usage(input_tokens=tin, output_tokens=tout), price)
        mine = model_price(provider, model)
        exact_tokens += tin + tout
        if mine is not None:
            exact_cost += Fraction(tin * mine[0] + tout * mine[1], 1_000_000)
        assert (price is None) == (mine is None)
        # The model's verdict: turn limits first, tokens before cost; over, not at.
        used = {
            "turn_tokens": exact_tokens,
            "turn_cost": exact_cost,
            "session_tokens": session_tokens + exact_tokens,
            "session_cost": Fraction(session_micro, 1_000_000) + exact_cost,
        }
        expected = next(
            (
                name
                for name in ("turn_tokens", "turn_cost", "session_tokens", "session_cost")
                if limits[name] is not None and used[name] > limits[name]
            ),
            None,
        )
        verdict = exceeded(budget, turn=turn, session=session + turn)
        assert (verdict[0] if verdict else None) == expected
        assert turn.tokens == exact_tokens


def test_bad_budgets_are_refused_where_they_are_built() -> None:
    with pytest.raises(ValueError, match="turn_tokens"):
        Budget(turn_tokens=0)
    with pytest.raises(ValueError, match="session_cost"):
        Budget(session_cost=-1.0)
    with pytest.raises(ValueError, match="prices"):
        Budget(prices={"m": (1, 2)})  # type: ignore[dict-item]


# -- end to end -------------------------------------------------------------------------

TEN = Usage(input_tokens=6, output_tokens=4)


def steady(name: str = "llm", usage: Usage = TEN, model: str = "m1") -> ScriptedProvider:
    return ScriptedProvider([ScriptedReply(text=["ok"], usage=usage)], name=name, model=model)


def with_budget(**limits: Any) -> AgentConfig:
    prices = {"m1": Pricing(input=1_000_000, output=1_000_000)}  # one unit per token
    return AgentConfig(budget=Budget(prices=prices, **limits))


async def test_a_turn_over_its_token_limit_fails_with_limit_exceeded_and_a_valid_transcript(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        # Calls the tool each time: the second reply goes over 15 tokens.
        return ScriptedReply(
            tool_calls=[ScriptedToolCall("record", {"n": attempt}, id=f"c{attempt}")], usage=TEN
        )

    provider = ScriptedProvider(play, model="m1")
    async with cap_host([provider], config=with_budget(turn_tokens=15)) as cap:
        events = await events_of(cap.host, "s", "go")
        result = final(events)
        assert result.status == "failed" and result.error_kind == "limit_exceeded"
        reached = [e for e in events if isinstance(e, am.LimitReached)]
        assert [(r.limit, r.value, r.used) for r in reached] == [("turn_tokens", 15, 20)]
        assert "turn_tokens" in result.error
        assert provider.attempts == 2 and cap.counters.ran == [1]
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")


async def test_a_turn_over_its_cost_limit_fails_and_reports_the_cost(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cap_host([steady()], config=with_budget(turn_cost=9.5)) as cap:
        result = await cap.host.run("s", "hi")
        assert result.error_kind == "limit_exceeded" and "turn_cost" in result.error
        assert result.cost == 10.0 and [c.cost for c in result.calls] == [10.0]


async def test_a_cost_limit_without_a_price_for_the_model_is_a_config_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cap_host([steady(model="unpriced")], config=with_budget(turn_cost=5.0)) as cap:
        result = await cap.host.run("s", "hi")
        assert result.status == "failed" and result.error_kind == "agent_config"
        assert "no price" in result.error


async def test_session_limits_survive_eviction_and_a_new_host_on_the_same_store(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cap_host([steady()]) as cap:
        bundle = cap.builder(with_budget(session_tokens=25, session_cost=35.0)).build()
        async with SessionHost(cap.system, bundle, HostConfig(idle_ttl=1.0), name="h1") as host:
            first = await host.run("s", "one")
            second = await host.run("s", "two")
            assert (first.status, second.status) == ("completed", "completed")
            await trio.sleep(5.0)  # idle: evicted
            assert not host.is_live("s")
            third = await host.run("s", "three")  # 30 tokens now: over 25
            assert third.status == "failed" and "session_tokens" in third.error
            info = await host.ask("s", am.GetSessionInfo())
            assert SPEND_FACT not in info.facts  # never shown as a fact
        # A new host (a restart) on the same store: the spend (30) is still there.
        bundle = cap.builder(with_budget(session_cost=25.0)).build()
        async with SessionHost(cap.system, bundle, name="h2") as host:
            result = await host.run("s", "four")
            assert result.status == "failed" and "session_cost" in result.error
            assert result.model_calls == 0  # refused before any call
        assert await cap.valid("s")


async def test_the_spend_fact_is_reserved(autojump_clock: trio.testing.MockClock) -> None:
    async with cap_host([steady()]) as cap:
        with pytest.raises(ValueError, match="reserved"):
            await cap.host.ask("s", am.SetFacts(set={SPEND_FACT: "0"}))


def many_calls(count: int) -> Any:
    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        if attempt == 1:
            calls = [ScriptedToolCall("record", {"n": i}, id=f"c{i}") for i in range(count)]
            return ScriptedReply(tool_calls=calls)
        return ScriptedReply(text="all done")

    return play


async def test_more_tool_calls_than_a_turn_allows_fail_it_before_any_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = ScriptedProvider(many_calls(5))
    config = AgentConfig(budget=Budget(tool_calls_per_turn=3))
    async with cap_host([provider], config=config) as cap:
        events = await events_of(cap.host, "s", "go")
        result = final(events)
        assert result.status == "failed" and "tool_calls_per_turn" in result.error
        assert cap.counters.ran == []
        reached = [e for e in events if isinstance(e, am.LimitReached)]
        assert [(r.limit, r.used) for r in reached] == [("tool_calls_per_turn", 5)]
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")


async def test_two_hundred_requested_calls_run_at_most_the_cap_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = ScriptedProvider(many_calls(200))
    config = AgentConfig(budget=Budget(concurrent_tool_calls=4), tool_timeout=1000.0)
    async with cap_host([provider], config=config, work=1.0) as cap:
        start = trio.current_time()
        result = await cap.host.run("s", "go")
        assert result.status == "completed" and result.text == "all done"
        assert sorted(cap.counters.ran) == list(range(200))
        assert cap.counters.most == 4
        # Fifty waves of four one-second calls, in virtual time.
        assert trio.current_time() - start == pytest.approx(50.0, abs=0.5)
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")


@pytest.mark.parametrize("cancel_at", [0.0, 0.5, 1.0, 1.5, 3.2, 7.0, 49.5])
async def test_a_capped_batch_cancelled_anywhere_answers_every_call_once(
    autojump_clock: trio.testing.MockClock, cancel_at: float
) -> None:
    provider = ScriptedProvider(many_calls(200))
    config = AgentConfig(budget=Budget(concurrent_tool_calls=4), tool_timeout=1000.0)
    async with cap_host([provider], config=config, work=1.0) as cap:
        async with trio.open_nursery() as nursery:
            results: list[am.TurnResult] = []

            async def run() -> None:
                results.append(await cap.host.run("s", "go"))

            nursery.start_soon(run)
            await trio.sleep(cancel_at)
            await cap.host.cancel("s")
        assert results and results[0].status in ("cancelled", "completed")
        assert cap.counters.most <= 4
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")
        # Every call that really ran has its real result in the transcript.
        from agcore_actors.llm import ToolMessage

        real = {
            m.tool_call_id
            for m in log
            if isinstance(m, ToolMessage) and "recorded" in str(m.content)
        }
        assert {f"c{n}" for n in cap.counters.ran} <= real | set()


async def test_a_budget_agent_and_a_plain_one_share_a_host(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = Agent(name="a", model=ModelSettings(model="m1"))
    async with cap_host([steady()], agents=[agent], config=with_budget(turn_tokens=100)) as cap:
        result = await cap.host.run("s", "hi")
        assert result.status == "completed" and result.cost == 10.0
