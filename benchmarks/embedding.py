"""CPU per turn through the embedding faces against the trio API, in the same run.

Each turn is model → one function tool → model, with the scripted provider (no network,
no latency), so the figures are the runtime's own CPU (``time.process_time``, every
thread of the process) divided by the turns. The same workload runs three ways:

- **trio**: ``SessionHost`` in ``trio.run`` (the baseline);
- **asyncio**: ``AsyncioHost`` in ``asyncio.run`` (trio as a guest of the asyncio loop);
- **blocking**: ``open_host`` from the main thread (trio on a thread of its own),
  sequential callers only.

C callers (1, then 50) run turns of their own sessions at once. Rounds interleave the
faces; the median of the rounds is reported with the ratio to trio (goal: asyncio ≤ 1.2x).

    .venv/bin/python benchmarks/embedding.py            # full run
    .venv/bin/python benchmarks/embedding.py --quick    # smoke (also run by the test suite)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.asyncio import AsyncioHost
from agcore_actors.blocking import open_host
from agcore_actors.llm import ChatRequest, ProviderRegistry, ToolMessage, provider_spec
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec

LIMITS = HostConfig(max_sessions=10_000, max_turns_in_flight=256)


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _play(request: ChatRequest, attempt: int) -> ScriptedReply:
    if isinstance(request.messages[-1], ToolMessage):
        return ScriptedReply(text="the sum is 5")
    return ScriptedReply(tool_calls=[ScriptedToolCall("add", '{"a": 2, "b": 3}', "c1")])


async def build(system: ActorSystem) -> AgentBuilder:
    registry = ProviderRegistry().register(ScriptedProvider(_play, name="scripted"))
    llm = await system.root.start_child(provider_spec("llm", registry=registry))
    tools = ToolRegistry([add])
    executor = await system.root.start_child(tool_executor_spec("tools", registry=tools))
    store = await system.root.start_child(session_store_spec("store", backend=InMemorySessions()))
    return (
        AgentBuilder()
        .provider(llm)
        .tools(executor, tools)
        .store(StoreTurns(store))
        .agent(Agent(name="a"))
    )


def _sessions(callers: int, turns: int) -> list[list[str]]:
    """Per caller, the session of each of its turns: a new one each time (a chat's first
    turn, as most of a bot's are), so no history grows over the run."""
    return [[f"c{c}-{n}" for n in range(turns // callers)] for c in range(callers)]


# -- the three faces: run ``turns`` turns with ``callers`` at once; CPU seconds --------------


def run_trio(callers: int, turns: int) -> float:
    async def main() -> float:
        async with ActorSystem() as system:
            bundle = (await build(system)).build()
            async with SessionHost(system, bundle, LIMITS) as host:
                await host.run("warm", "hi")
                start = time.process_time()

                async def caller(sessions: list[str]) -> None:
                    for session in sessions:
                        result = await host.run(session, "add 2 and 3")
                        assert result.status == "completed"

                async with trio.open_nursery() as nursery:
                    for sessions in _sessions(callers, turns):
                        nursery.start_soon(caller, sessions)
                return time.process_time() - start

    return trio.run(main)


def run_asyncio(callers: int, turns: int) -> float:
    async def main() -> float:
        async with AsyncioHost(build, LIMITS) as host:
            await host.run("warm", "hi")
            start = time.process_time()

            async def caller(sessions: list[str]) -> None:
                for session in sessions:
                    result = await host.run(session, "add 2 and 3")
                    assert result.status == "completed"

            await asyncio.gather(*(caller(s) for s in _sessions(callers, turns)))
            return time.process_time() - start

    return asyncio.run(main())


def run_blocking(callers: int, turns: int) -> float:
    with open_host(build, LIMITS) as host:
        host.run("warm", "hi")
        start = time.process_time()
        for sessions in _sessions(callers, turns):
            for session in sessions:
                assert host.run(session, "add 2 and 3").status == "completed"
        return time.process_time() - start


FACES: dict[str, Callable[[int, int], float]] = {
    "trio": run_trio,
    "asyncio": run_asyncio,
    "blocking": run_blocking,
}


def measure(rounds: int, turns: int) -> dict[tuple[str, int], tuple[float, float]]:
    """By (face, callers): the median µs of CPU per turn, and the median over rounds of
    the ratio to trio's figure of the same round (the faces alternate their order)."""
    samples: dict[tuple[str, int], list[float]] = {}
    ratios: dict[tuple[str, int], list[float]] = {}
    for round_ in range(rounds):
        for callers in (1, 50):
            faces = [f for f in FACES if not (f == "blocking" and callers > 1)]
            if round_ % 2:
                faces.reverse()
            this_round = {face: FACES[face](callers, turns) / turns * 1e6 for face in faces}
            for face, value in this_round.items():
                samples.setdefault((face, callers), []).append(value)
                ratios.setdefault((face, callers), []).append(value / this_round["trio"])
    return {
        key: (statistics.median(values), statistics.median(ratios[key]))
        for key, values in samples.items()
    }


def report(figures: dict[tuple[str, int], tuple[float, float]], turns: int, rounds: int) -> None:
    print("## Embedding faces (benchmarks/embedding.py)\n")
    print(f"{turns} turns (model → tool → model, scripted provider, a new session each) per")
    print(f"run, {rounds} interleaved rounds; CPU of the whole process per turn (median), and")
    print("the median of the rounds' ratios to the trio API.\n")
    print("| face | callers at once | CPU µs/turn | vs trio |")
    print("|---|---|---|---|")
    order = {"trio": 0, "asyncio": 1, "blocking": 2}
    for (face, callers), (value, ratio) in sorted(
        figures.items(), key=lambda kv: (kv[0][1], order[kv[0][0]])
    ):
        print(f"| {face} | {callers} | {value:.0f} | {ratio:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few turns, 1 round")
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    turns, rounds = (50, 1) if args.quick else (args.turns, args.rounds)
    report(measure(rounds, turns), turns, rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
