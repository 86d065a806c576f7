"""SessionGate: many calls of several sessions at once, some cancelled while they wait or
while they run; at every moment the running calls are of one session, every call that is
not cancelled runs, a waiting session is not overtaken by later calls of the running one,
and nothing is left held at the end."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing

from agcore_actors.mcp._session_gate import SessionGate


@pytest.mark.parametrize("seed", range(20))
async def test_running_calls_are_always_of_one_session_and_every_call_runs(
    seed: int, autojump_clock: trio.testing.MockClock
) -> None:
    rng = random.Random(seed)
    gate = SessionGate()
    running: list[str] = []
    ran: list[int] = []
    cancelled: set[int] = set()

    async def call(n: int, session: str, start: float, work: float, cancel_at: float) -> None:
        await trio.sleep(start)
        with trio.move_on_after(cancel_at) as scope:
            async with gate.enter(session):
                running.append(session)
                assert set(running) == {session}
                try:
                    await trio.sleep(work)
                    ran.append(n)
                finally:
                    running.remove(session)
        if scope.cancelled_caught:
            cancelled.add(n)

    calls = 60
    async with trio.open_nursery() as nursery:
        for n in range(calls):
            session = f"s{rng.randrange(4)}"
            cancel_at = rng.uniform(0.1, 3.0) if rng.random() < 0.2 else 1e9
            nursery.start_soon(
                call, n, session, rng.uniform(0, 2), rng.uniform(0.01, 0.5), cancel_at
            )
    assert sorted(ran + sorted(cancelled)) == list(range(calls))
    assert gate.current is None and gate.running == 0 and not gate._queue


async def test_a_waiting_session_goes_before_later_calls_of_the_running_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    gate = SessionGate()
    order: list[str] = []

    async def call(name: str, session: str, start: float) -> None:
        await trio.sleep(start)
        async with gate.enter(session):
            order.append(name)
            await trio.sleep(1)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, "a1", "a", 0)
        nursery.start_soon(call, "b1", "b", 0.1)
        nursery.start_soon(call, "a2", "a", 0.2)  # queued behind b, not let in beside a1
        nursery.start_soon(call, "b2", "b", 0.3)  # goes in with b1's turn
    assert order[0] == "a1" and sorted(order[1:3]) == ["b1", "b2"] and order[3] == "a2"
