"""What durable and suspended turns cost per turn against plain ones, through SessionHost.

Each turn is model → two tool calls in one reply → model, with the scripted provider (no
HTTP: the figures are the runtime's and the store's own). Four ways to run it:

- ``plain``: the default ``AgentConfig`` (the reply and both results in the turn's commit);
- ``durable``: ``interrupted="resume"`` (the reply stored before the calls run, each
  result stored as it comes: one ``AppendTurn`` each);
- ``approved in turn``: one of the calls needs approval, ``approvals="wait"``, answered
  by the reader of the turn's events as it is asked (the baseline for the next row);
- ``suspend + answer``: the same call with ``approvals="suspend"``: the turn suspends
  (stored, the session freed), then ``host.answer`` resumes it to its end — one turn is
  the two requests together.

S sessions run T turns each, the sessions at once; the figures are CPU (``process_time``)
and wall time per turn, the median of the rounds, with the store's writes per turn
(counted at the session's store port) — in memory and in SQLite (a file, ``NORMAL``).

    .venv/bin/python benchmarks/durable.py            # full run
    .venv/bin/python benchmarks/durable.py --quick    # smoke (also run by the test suite)
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    HostConfig,
    SessionHost,
    StoreTurns,
    session_approver,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    provider_actor,
)
from agcore_actors.store import InMemorySessions, SqliteSessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool

MODES = ("plain", "durable", "approved in turn", "suspend + answer")
CONFIGS = {
    "plain": AgentConfig(turn_timeout=None),
    "durable": AgentConfig(turn_timeout=None, interrupted="resume"),
    "approved in turn": AgentConfig(turn_timeout=None),
    "suspend + answer": AgentConfig(turn_timeout=None, approvals="suspend"),
}


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool(requires_approval=True)
async def guarded_add(a: int, b: int) -> int:
    """Add two integers (needs approval)."""
    return a + b


def _model(guarded: bool) -> Any:
    first = "guarded_add" if guarded else "add"

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        if isinstance(request.messages[-1], ToolMessage):
            return ScriptedReply(text="5 and 7")
        return ScriptedReply(
            tool_calls=[
                ScriptedToolCall(first, '{"a": 2, "b": 3}'),
                ScriptedToolCall("add", '{"a": 3, "b": 4}'),
            ]
        )

    return play


class CountingTurns(StoreTurns):
    """The session store port, counting its writes by request."""

    __slots__ = ("counts",)

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.counts: collections.Counter[str] = collections.Counter()

    async def _ask(self, request: Any) -> Any:
        self.counts[type(request).__name__] += 1
        return await super()._ask(request)


async def _turn(host: SessionHost, mode: str, session: str, turn: str) -> None:
    if mode in ("plain", "durable"):
        result = await host.run(session, "add", turn=turn)
    elif mode == "approved in turn":
        async with host.submit(session, "add", turn=turn) as events:
            async for event in events:
                if isinstance(event, am.ApprovalRequested):
                    assert await host.approve(session, event.call_id, True)
                last = event
        assert isinstance(last, am.TurnCompleted), last
        return
    else:
        suspended = await host.run(session, "add", turn=turn)
        assert suspended.status == "suspended", suspended
        (waiting,) = suspended.awaiting
        answered = await host.answer(session, turn, waiting.call_id)
        assert answered.result is not None
        result = answered.result
    assert result.status == "completed", result


async def one_round(
    mode: str, backend: str, sessions: int, turns: int
) -> tuple[float, float, float]:
    """CPU ms, wall ms and store writes per turn of ``mode`` on ``backend``."""
    with tempfile.TemporaryDirectory() as tmp:
        async with ActorSystem() as system:
            store_backend: Any = (
                InMemorySessions()
                if backend == "memory"
                else SqliteSessions(str(Path(tmp) / "s.db"))
            )
            store = await system.root.start_child(
                session_store_spec("store", backend=store_backend)
            )
            guarded = mode in ("approved in turn", "suspend + answer")
            registry = ProviderRegistry().register(ScriptedProvider(_model(guarded)))
            llm = await system.spawn(
                provider_actor(registry, retry=RetryConfig(max_retries=0)), name="llm"
            )
            tools = ToolRegistry([add, guarded_add])
            executor = await system.spawn(
                lambda: ToolExecutor(tools, approver=session_approver(system)), name="tools"
            )
            port = CountingTurns(store)
            bundle = (
                AgentBuilder()
                .provider(llm)
                .store(port)
                .tools(executor, tools)
                .agent(Agent(name="calc"))
                .config(CONFIGS[mode])
                .build()
            )
            async with SessionHost(system, bundle, HostConfig(max_sessions=sessions + 1)) as host:
                await _turn(host, mode, "warm", "w0")

                async def session(index: int) -> None:
                    for t in range(turns):
                        await _turn(host, mode, f"s{index}", f"t{t}")

                port.counts.clear()
                cpu, wall = time.process_time(), time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for index in range(sessions):
                        nursery.start_soon(session, index)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    done = sessions * turns
    return cpu / done * 1000, wall / done * 1000, sum(port.counts.values()) / done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="durable and suspended turns against plain")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    sessions, turns = (2, 2) if args.quick else (args.sessions, args.turns)
    print("## Durable and suspended turns (benchmarks/durable.py)\n")
    print(
        f"{sessions} sessions x {turns} turns at once (model → 2 tool calls → model, scripted"
        f" provider); median of {rounds} interleaved rounds.\n"
    )
    print("| store | mode | CPU ms/turn | vs plain | wall ms/turn | store writes/turn |")
    print("|---|---|---:|---:|---:|---:|")
    for backend in ("memory", "sqlite"):
        figures: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
        for _ in range(rounds):
            for mode in MODES:
                figures[mode].append(trio.run(one_round, mode, backend, sessions, turns))
        plain = statistics.median(f[0] for f in figures["plain"])
        for mode in MODES:
            cpu = statistics.median(f[0] for f in figures[mode])
            wall = statistics.median(f[1] for f in figures[mode])
            writes = statistics.median(f[2] for f in figures[mode])
            print(
                f"| {backend} | {mode} | {cpu:.2f} | {cpu / plain:.2f}x | {wall:.2f} |"
                f" {writes:.1f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
