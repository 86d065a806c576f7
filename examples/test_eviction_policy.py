"""Property-testing your own eviction policy: ``agcore_actors.testing`` + hypothesis.

    python -m pytest examples/test_eviction_policy.py
    python examples/test_eviction_policy.py             (the same, without pytest)

``MY_HOST`` is the eviction policy a deployment chose: how long an idle session stays
live (``idle_ttl``) and how many stay live at once (``max_sessions``) — the ``[host]`` table
of ``agcore.toml``, or the ``HostConfig`` given to ``SessionHost``. The test states what
it promises — never more live sessions than the cap, idle ones put away, and no user's
conversation forgotten when their session is evicted and comes back — and hypothesis
checks it over many patterns of traffic. The scripted model (``count_user_turns``) answers
with the number of user messages it was sent: each answer says how much of the
conversation it saw.
"""

# --8<-- [start:imports]
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings

from agcore_actors.agent import HostConfig
from agcore_actors.testing import Visit, advance, count_user_turns, run_virtual, scripted_host
from agcore_actors.testing.strategies import visits

# --8<-- [end:imports]

# --8<-- [start:test]
MY_HOST = HostConfig(idle_ttl=300.0, max_sessions=3)


@settings(max_examples=30, deadline=None)
@given(traffic=visits(sessions=5, max_wait=2 * MY_HOST.idle_ttl))
def test_my_eviction_policy(traffic: list[Visit]) -> None:
    async def scenario() -> None:
        turns = Counter[str]()
        async with scripted_host(count_user_turns, config=MY_HOST) as bot:
            for visit in traffic:
                await advance(visit.wait)
                turns[visit.session] += 1
                result = await bot.run(visit.session, "hi")
                assert result.text == str(turns[visit.session])  # nothing forgotten
                assert len(bot.live_sessions) <= MY_HOST.max_sessions
            await advance(2 * MY_HOST.idle_ttl)
            assert bot.live_sessions == []  # idle sessions are put away

    run_virtual(scenario)


# --8<-- [end:test]


if __name__ == "__main__":
    test_my_eviction_policy()
    print("the eviction policy keeps its promises")
